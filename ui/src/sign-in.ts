/**
 * MLflow's pages live after the `#`, which the browser never sends to the server: the sign-in form
 * gets it here, so the user lands back on the page they opened.
 */
const field = document.querySelector<HTMLInputElement>('input[name="return_to"]');
if (field && location.hash && !field.value.includes('#')) field.value += location.hash;
