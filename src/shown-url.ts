/**
 * A URL as it may be shown in a log line or an error: its password, and a libpq-style `password` query
 * parameter, replaced by `***` (the user name stays, to tell accounts apart). Anything that does not
 * parse as a URL is not shown at all.
 */
export function shownUrl(url: string, unparsable = '(a URL that does not parse)'): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    if (u.searchParams.has('password')) u.searchParams.set('password', '***');
    return u.toString().replace(/\/$/, '');
  } catch {
    return unparsable;
  }
}
