/** Where flowgate lives, read from the URL of the script itself (works under any base path). */
export function basePathFromScript(script: HTMLOrSVGScriptElement | null, file: string): string {
  const src = script instanceof HTMLScriptElement ? script.src : '';
  const path = src ? new URL(src).pathname : '';
  const tail = `/flowgate/ui/assets/${file}`;
  return path.endsWith(tail) ? path.slice(0, -tail.length) : '';
}

export function loginUrl(base: string): string {
  const here = location.pathname + location.search + location.hash;
  return `${base}/flowgate/login?return_to=${encodeURIComponent(here)}`;
}

let leaving = false;

/** An expired or ended session: MLflow's calls start failing with 401; the browser goes to sign-in instead of a broken page. */
function signInAgain(base: string): void {
  if (leaving) return;
  leaving = true;
  location.assign(loginUrl(base));
}

const isOwnApi = (base: string, url: string): boolean => {
  try {
    const u = new URL(url, location.href);
    return u.origin === location.origin && u.pathname.startsWith(`${base}/`);
  } catch {
    return false;
  }
};

export function watchForSignOut(base: string): void {
  const realFetch = window.fetch.bind(window);
  window.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const r = await realFetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (r.status === 401 && isOwnApi(base, url)) signInAgain(base);
    return r;
  };
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (this: XMLHttpRequest, method: string, url: string | URL, ...rest: unknown[]) {
    this.addEventListener('loadend', () => {
      if (this.status === 401 && isOwnApi(base, String(url))) signInAgain(base);
    });
    return (open as (...a: unknown[]) => void).call(this, method, url, ...rest);
  } as typeof XMLHttpRequest.prototype.open;
}
