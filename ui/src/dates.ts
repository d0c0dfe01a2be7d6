/**
 * Dates as the screens show them: in the viewer's own time zone and language (the browser's), a day
 * and a time in words (`25 Nov 2026, 14:46`), never an ISO string.
 */
const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const DAY = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

const valid = (d: Date) => !Number.isNaN(d.getTime());

/** An instant (ISO 8601 or epoch ms) as a local day and time. */
export const dateTime = (at: string | number): string => {
  const d = new Date(at);
  return valid(d) ? DATE_TIME.format(d) : String(at);
};

/** An instant as a local day. */
export const day = (at: string | number): string => {
  const d = new Date(at);
  return valid(d) ? DAY.format(d) : String(at);
};

/** A date field's value (`YYYY-MM-DD`, a day in the viewer's calendar) `days` from today. */
export function inDays(days: number, from = new Date()): string {
  const d = new Date(from.getFullYear(), from.getMonth(), from.getDate() + days);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** The start of a date field's day in the viewer's time zone, as the instant the API takes; undefined for no valid day. */
export function startOfDay(field: string): Date | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(field);
  if (!m) return undefined;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return valid(d) && d.getDate() === Number(m[3]) ? d : undefined;
}

const DAY_MS = 86_400_000;

/**
 * Why a token expiry day cannot be used (`undefined`: it can): it must be a day after today and, when
 * the server's maximum is known, no further ahead than it lets a token live (as it checks: from now).
 */
export function expiryProblem(field: string, now = new Date(), maxDays?: number): string | undefined {
  const d = startOfDay(field);
  if (!d) return 'Choose the day the token expires.';
  if (d.getTime() <= now.getTime()) return `The expiry day must be after today (${day(now.getTime())}).`;
  if (maxDays !== undefined && d.getTime() > now.getTime() + maxDays * DAY_MS)
    return `Tokens live at most ${maxDays} days here: choose ${day(startOfDay(inDays(maxDays, now))!.getTime())} or earlier.`;
  return undefined;
}

/** A date field's day as the instant the API takes (its start, in the viewer's time zone). */
export const expirationOf = (field: string): string => startOfDay(field)!.toISOString();
