import { FlowgateError, sendError } from '../../errors.js';
import type { ResponseHandler } from '../forward.js';
import { keepingWorkspace } from '../../workspaces/request-workspace.js';
import { headersWithoutLength } from './relay.js';

/**
 * What a filtered route relays of an MLflow error answer: its error code and message, nothing else (a
 * body in an error status could carry rows the filter never looked at).
 */
export function errorFieldsOnly(status: number, json: unknown): { error_code: string; message: string } {
  const o = typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {};
  return {
    error_code: typeof o.error_code === 'string' ? o.error_code : 'INTERNAL_ERROR',
    message: typeof o.message === 'string' ? o.message : `MLflow answered with status ${status}`,
  };
}

/** A success other than 200 is none MLflow's handlers give a filtered route: refused rather than filtered on a guess. */
export const unexpectedSuccess = (status: number) => new FlowgateError('BAD_GATEWAY', `MLflow answered with status ${status}, which flowgate does not filter`);

/**
 * Reads MLflow's whole JSON answer, lets `rewrite` change it in place, and sends the result. Unlike
 * relayAfter this fails closed: an answer that cannot be read (too large, compressed, not JSON) or
 * a rewrite that throws is never passed on unfiltered. Another 2xx is a 502; an error answer is
 * relayed with its status, error code and message only.
 */
export function rewriteJsonAnswer(
  given: (json: unknown) => Promise<void>,
  maxBytes: number,
  onError: (err: unknown) => void,
): ResponseHandler {
  const rewrite = keepingWorkspace(given);
  return (upstream, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    upstream.body.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) tooLarge = true;
      else chunks.push(c);
    });
    upstream.body.on('error', () => res.destroy());
    upstream.body.on('end', () => {
      void (async () => {
        const headers = headersWithoutLength(upstream);
        let body = Buffer.concat(chunks);
        const status = upstream.statusCode ?? 502;
        if (status !== 200 && status >= 200 && status < 300) {
          sendError(res, unexpectedSuccess(status));
          return;
        }
        if (status >= 300 && !tooLarge) {
          let json: unknown;
          try {
            const encoding = upstream.headers['content-encoding'];
            json = encoding === undefined || encoding === 'identity' ? JSON.parse(body.toString('utf8')) : undefined;
          } catch {
            json = undefined;
          }
          body = Buffer.from(JSON.stringify(errorFieldsOnly(status, json)));
          delete headers['content-encoding'];
          headers['content-type'] = 'application/json';
        } else {
          try {
            const encoding = upstream.headers['content-encoding'];
            if (tooLarge || (encoding !== undefined && encoding !== 'identity')) throw new Error('answer not inspectable');
            const json = JSON.parse(body.toString('utf8')) as unknown;
            await rewrite(json);
            body = Buffer.from(JSON.stringify(json));
          } catch (err) {
            // A refusal decided on the answer (it names another resource than the one decided on) is the caller's answer.
            if (err instanceof FlowgateError && err.status < 500) {
              sendError(res, err);
              return;
            }
            onError(err);
            sendError(res, new FlowgateError('BAD_GATEWAY', 'MLflow answered with something flowgate could not filter'));
            return;
          }
        }
        headers['content-length'] = String(body.length);
        res.writeHead(upstream.statusCode ?? 502, headers);
        res.end(body);
      })();
    });
  };
}
