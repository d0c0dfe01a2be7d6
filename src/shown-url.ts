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

/** A URL without any user name or password in it (the upstream's, as the start lines show it). */
export function urlWithoutCredentials(url: string, unparsable = '(unparsable upstream URL)'): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href.replace(/\/$/, '');
  } catch {
    return unparsable;
  }
}
