import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** What Node's parser error codes mean for the client, as Node's own answer maps them. */
const STATUS_BY_CODE: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

const ERROR_CODE_BY_STATUS: Record<number, string> = { 431: 'REQUEST_LIMIT_EXCEEDED', 413: 'REQUEST_LIMIT_EXCEEDED', 408: 'REQUEST_TIMEOUT' };

/** llhttp's reasons are fixed sentences of its own; anything else is not repeated to the client. */
const PLAIN_REASON = /^[\x20-\x7e]{1,160}$/;

type ParserError = Error & { code?: string; reason?: unknown };
type ServedSocket = Duplex & { _httpMessage?: { headersSent?: boolean } | null };

/**
 * A request Node's parser refused (a body framed two ways, an unknown transfer coding, a malformed
 * length, oversized headers) gets its answer in MLflow's error shape, like every refusal of
 * flowgate's, and the connection closes: nothing after the refused bytes is read as a request.
 * Node's own rule stands for when an answer can be written at all: not over a response already
 * under way on the socket.
 */
export function answerClientError(err: ParserError, socket: ServedSocket): void {
  if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
    socket.destroy();
    return;
  }
  const status = STATUS_BY_CODE[err.code ?? ''] ?? 400;
  const reason = typeof err.reason === 'string' && PLAIN_REASON.test(err.reason) ? `: ${err.reason}` : '';
  const body = JSON.stringify({
    error_code: ERROR_CODE_BY_STATUS[status] ?? 'BAD_REQUEST',
    message: `The request could not be read as HTTP/1.1${reason}`,
  });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
