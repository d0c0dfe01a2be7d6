import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../errors.js';

/**
 * A page's own call (fetch/XHR from MLflow's UI or flowgate's screens) that is not authenticated:
 * answered 401 without the Basic challenge, which would make the browser pop up its password
 * dialog (and stall the call behind it) instead of letting the page send the user to sign-in.
 * Browsers mark their requests with Sec-Fetch-Site; programs (the MLflow client, curl) do not.
 */
export function answerPageCall(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.headers['sec-fetch-site'] === undefined || req.headers['sec-fetch-mode'] === 'navigate') return false;
  req.resume();
  sendJson(res, 401, { error_code: 'UNAUTHENTICATED', message: 'Not signed in, or the session has ended: sign in again' }, { 'Cache-Control': 'no-store' });
  return true;
}
