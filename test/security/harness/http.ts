import { request as httpRequest } from 'node:http';

/** One HTTP exchange, kept so a bypass can be reported with the exact requests that made it. */
export interface Exchange {
  readonly method: string;
  readonly url: string;
  readonly requestHeaders: Record<string, string>;
  readonly requestBody?: string;
  readonly status: number;
  readonly text: string;
}

export interface Reply {
  readonly status: number;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: any;
}

export interface CallOptions {
  /** Sent as JSON (`JSON.stringify(body)`): a string here goes out as a JSON string, i.e. double-encoded. */
  readonly body?: unknown;
  /** Sent as is (OTLP protobuf, artifact bytes, hand-written JSON). */
  readonly raw?: string | Uint8Array;
  readonly query?: Record<string, string | readonly string[]>;
  readonly headers?: Record<string, string>;
  /**
   * Send `path` (with any query written into it) byte for byte: fetch would resolve `.` and `..`
   * segments, `%2e` among them, before the request leaves.
   */
  readonly verbatim?: boolean;
}

export type Caller = (method: string, path: string, options?: CallOptions) => Promise<Reply>;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A client for one identity at one base URL (flowgate, or MLflow itself for controls). Every
 * exchange is handed to `observe`, which scans it for secrets and keeps it for the report.
 */
export function caller(base: string, authorization: string | undefined, observe: (exchange: Exchange) => void): Caller {
  return async (method, path, options = {}) => {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(options.query ?? {}))
      for (const one of typeof value === 'string' ? [value] : value) query.append(key, one);
    const url = `${base}${path}${query.size > 0 ? `?${query.toString()}` : ''}`;
    const headers: Record<string, string> = { ...(authorization ? { authorization } : {}) };
    let body: string | Uint8Array | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    } else if (options.raw !== undefined) body = options.raw;
    Object.assign(headers, options.headers);
    const response = options.verbatim ? await sendVerbatim(base, path, method, headers, body) : await fetchText(url, method, headers, body);
    const { text } = response;
    const shownBody = body === undefined ? undefined : typeof body === 'string' ? body : `<${body.byteLength} bytes>`;
    const { authorization: _hidden, ...shownHeaders } = headers;
    observe({ method, url, requestHeaders: shownHeaders, requestBody: shownBody, status: response.status, text });
    return { status: response.status, text, json: parseJson(text) };
  };
}

interface RawResponse {
  readonly status: number;
  readonly text: string;
}

async function fetchText(url: string, method: string, headers: Record<string, string>, body: string | Uint8Array | undefined): Promise<RawResponse> {
  const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(30_000) });
  return { status: response.status, text: await response.text() };
}

function sendVerbatim(base: string, path: string, method: string, headers: Record<string, string>, body: string | Uint8Array | undefined): Promise<RawResponse> {
  const target = new URL(base);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { host: target.hostname, port: target.port, method, path: `${target.pathname.replace(/\/$/, '')}${path}`, headers, timeout: 30_000 },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`${method} ${path} timed out`)));
    request.on('error', reject);
    request.end(body);
  });
}

/** The reply must be a success: setup steps that fail make every later verdict meaningless. */
export function ok(reply: Reply, what: string): any {
  if (reply.status >= 300) throw new Error(`${what} → ${reply.status} ${reply.text.slice(0, 500)}`);
  return reply.json;
}

export function describeExchange(e: Exchange): string {
  const headers = Object.entries(e.requestHeaders)
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
  return `${e.method} ${e.url}${headers ? ` [${headers}]` : ''}${e.requestBody !== undefined ? ` body=${e.requestBody.slice(0, 600)}` : ''} → ${e.status}`;
}
