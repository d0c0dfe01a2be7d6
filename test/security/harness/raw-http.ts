import type { Server } from 'node:http';
import net from 'node:net';

/**
 * Requests written byte for byte on a socket, and upstreams watched byte for byte: the framing of a
 * request (Content-Length, chunks, trailers, Expect) is what the framing attacks are about, and an
 * HTTP client library would frame it its own way.
 */

export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Whether a `100 Continue` came before the answer. */
  readonly continued: boolean;
}

export interface RawRequest {
  /** Request line and header lines, without the blank line that ends them. */
  readonly head: readonly string[];
  /** Body bytes exactly as written after the head (already chunk-encoded where the head says so). */
  readonly body?: string;
  /** With `Expect: 100-continue` in the head: wait for the interim answer (or the final one, or 1 s) before the body. */
  readonly awaitContinue?: boolean;
}

/** One request on a fresh connection to 127.0.0.1:`port`; resolves with the first final answer. */
export async function rawExchange(port: number, request: RawRequest, timeoutMs = 5000): Promise<RawAnswer> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  let data = Buffer.alloc(0);
  let closed = false;
  let wake: () => void = () => {};
  socket.on('data', (chunk: Buffer) => {
    data = Buffer.concat([data, chunk]);
    wake();
  });
  socket.on('close', () => {
    closed = true;
    wake();
  });
  const until = async (done: () => boolean, deadline: number) => {
    while (!done() && !closed && Date.now() < deadline) await new Promise<void>((r) => ((wake = r), setTimeout(r, 20)));
  };
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  try {
    socket.write(`${request.head.join('\r\n')}\r\n\r\n`, 'latin1');
    if (request.awaitContinue) await until(() => data.includes('\r\n\r\n'), Date.now() + 1000);
    if (request.body !== undefined && !closed) socket.write(request.body, 'latin1');
    const deadline = Date.now() + timeoutMs;
    const isHead = request.head[0]!.startsWith('HEAD ');
    for (;;) {
      const answer = parseAnswer(data.toString('latin1'), isHead);
      if (answer) return answer;
      if (closed || Date.now() > deadline) throw new Error(`no complete answer (closed: ${closed}); got ${JSON.stringify(data.toString('latin1'))}`);
      await until(() => false, Date.now() + 50);
    }
  } finally {
    socket.destroy();
  }
}

/** The first final answer in `text` once it is complete (Content-Length or chunked body), else undefined. */
function parseAnswer(text: string, isHead: boolean): RawAnswer | undefined {
  let rest = text;
  let continued = false;
  while (rest.startsWith('HTTP/1.1 1')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    continued = true;
    rest = rest.slice(end + 4);
  }
  const headEnd = rest.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine, ...lines] = rest.slice(0, headEnd).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = rest.slice(headEnd + 4);
  if (isHead || status === 204 || status === 304) return { status, headers, body: '', continued };
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    return body.length >= length ? { status, headers, body: body.slice(0, length), continued } : undefined;
  }
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    if (!body.includes('0\r\n\r\n')) return undefined;
    let out = '';
    let at = 0;
    for (;;) {
      const lineEnd = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, lineEnd), 16);
      if (size === 0) return { status, headers, body: out, continued };
      out += body.slice(lineEnd + 2, lineEnd + 2 + size);
      at = lineEnd + 2 + size + 2;
    }
  }
  return undefined;
}

/** Chunk-encodes `body` in pieces of at most `size` bytes, with optional trailer lines. */
export function chunked(body: string, trailers: readonly string[] = [], size = 16): string {
  let out = '';
  for (let i = 0; i < body.length; i += size) {
    const piece = body.slice(i, i + size);
    out += `${Buffer.byteLength(piece, 'latin1').toString(16)}\r\n${piece}\r\n`;
  }
  return `${out}0\r\n${trailers.map((t) => `${t}\r\n`).join('')}\r\n`;
}

/**
 * What an upstream (a Node HTTP server: llhttp, the parser uvicorn's httptools also uses) made of
 * the bytes it received: requests it could not parse, and every byte on every connection.
 */
export interface WireWatch {
  readonly parseErrors: string[];
  /** All bytes received since the last reset, each piece tagged with its connection. */
  readonly bytes: () => string;
  /** Forget what was seen so far. */
  reset(): void;
}

export function watchWire(server: Server): WireWatch {
  const parseErrors: string[] = [];
  let received = '';
  let connections = 0;
  server.on('connection', (socket: net.Socket) => {
    const id = ++connections;
    socket.on('data', (chunk: Buffer) => (received += `[connection ${id}]${chunk.toString('latin1')}`));
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
    parseErrors.push(err.code ?? err.message);
    socket.destroy();
  });
  return {
    parseErrors,
    bytes: () => received,
    reset() {
      parseErrors.length = 0;
      received = '';
    },
  };
}
