/**
 * What is wrong with a JSON text, by position only: V8's message quotes the text around the error, and
 * a config file's text holds secrets (an unquoted token is the usual mistake).
 */
export function jsonProblem(e: unknown): string {
  if (!(e instanceof SyntaxError)) return (e as Error).message;
  const position = /position (\d+)/.exec(e.message)?.[1];
  return position === undefined ? 'not valid JSON' : `not valid JSON at position ${position}`;
}
