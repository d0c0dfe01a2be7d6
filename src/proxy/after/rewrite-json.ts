import { FlowgateError, sendError } from '../../errors.js';
import type { ResponseHandler } from '../forward.js';
import { keepingWorkspace } from '../../workspaces/request-workspace.js';
import { headersWithoutLength } from './relay.js';

/**
 * Reads MLflow's whole JSON answer, lets `rewrite` change it in place, and sends the result. Unlike
 * relayAfter this fails closed: an answer that cannot be read (too large, compressed, not JSON) or
 * a rewrite that throws is never passed on unfiltered. Other (non-200) answers are relayed as they are.
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
        if (upstream.statusCode === 200 || tooLarge) {
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
