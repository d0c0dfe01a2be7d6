import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerPageCall } from '../../src/ui/quiet-401.js';
import { fromThisHost } from '../../src/http/same-origin.js';
import { createShell, injectMenu } from '../../src/ui/shell.js';

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('injectMenu', () => {
  const page = '<!doctype html><html><head><title>MLflow</title></head><body><div id="root"></div></body></html>';

  it('adds a stylesheet and a deferred script of flowgate’s own, before </head>, under the base path', () => {
    const out = injectMenu(page, '/mlflow');
    expect(out).toContain(
      '<link rel="stylesheet" href="/mlflow/flowgate/ui/assets/menu.css"><script defer src="/mlflow/flowgate/ui/assets/menu.js"></script></head>',
    );
    expect(out.match(/<script/g)).toHaveLength(1);
  });

  it('at the root, and with no </head> at all', () => {
    expect(injectMenu(page, '')).toContain('src="/flowgate/ui/assets/menu.js"');
    expect(injectMenu('<p>x</p>', '')).toMatch(/^<p>x<\/p><link rel="stylesheet" href="\/flowgate\/ui\/assets\/menu.css">/);
  });

  it('escapes the base path it writes into the attributes', () => {
    expect(injectMenu(page, '/a"b')).toContain('href="/a&quot;b/flowgate/ui/assets/menu.css"');
  });
});

describe('fromThisHost', () => {
  it('accepts an Origin (or, without one, a Referer) naming the request’s own host', () => {
    expect(fromThisHost(req({ host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080' }))).toBe(true);
    expect(fromThisHost(req({ host: 'ml.example.com', origin: 'https://ml.example.com' }))).toBe(true);
    expect(fromThisHost(req({ host: 'ml.example.com', referer: 'https://ml.example.com/mlflow/flowgate/login' }))).toBe(true);
  });

  it('refuses another host, a null or odd origin, or no origin at all', () => {
    expect(fromThisHost(req({ host: 'ml.example.com', origin: 'https://evil.example' }))).toBe(false);
    expect(fromThisHost(req({ host: 'ml.example.com', origin: 'https://ml.example.com.evil.example' }))).toBe(false);
    expect(fromThisHost(req({ host: 'ml.example.com', origin: 'null' }))).toBe(false);
    expect(fromThisHost(req({ host: 'ml.example.com', origin: 'file://ml.example.com' }))).toBe(false);
    expect(fromThisHost(req({ host: 'ml.example.com' }))).toBe(false);
    expect(fromThisHost(req({ origin: 'https://ml.example.com' }))).toBe(false);
  });
});

describe('answerPageCall', () => {
  function fakeRes() {
    const out = { status: 0, headers: {} as Record<string, unknown>, body: '' };
    const res = {
      headersSent: false,
      writeHead(status: number, headers: Record<string, unknown>) {
        out.status = status;
        out.headers = headers;
        return res;
      },
      end(body: string) {
        out.body = body;
      },
    } as unknown as ServerResponse;
    return { res, out };
  }
  const withResume = (headers: Record<string, string>) => Object.assign(req(headers), { resume: () => undefined });

  it('answers a browser page’s own call with a 401 and no Basic challenge', () => {
    const { res, out } = fakeRes();
    expect(answerPageCall(withResume({ 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' }), res)).toBe(true);
    expect(out.status).toBe(401);
    expect(Object.keys(out.headers).map((h) => h.toLowerCase())).not.toContain('www-authenticate');
    expect(JSON.parse(out.body)).toMatchObject({ error_code: 'UNAUTHENTICATED' });
  });

  it('leaves programs (no Sec-Fetch-Site) and page loads to the usual 401', () => {
    expect(answerPageCall(withResume({ 'sec-fetch-mode': 'cors' }), fakeRes().res)).toBe(false);
    expect(answerPageCall(withResume({ 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' }), fakeRes().res)).toBe(false);
  });
});

describe('the MLflow shell through flowgate', () => {
  let upstream: Server;
  let flowgate: Server;
  let url = '';
  let answer: { status: number; type: string; body: string; framing?: Record<string, string> } = { status: 200, type: 'text/html; charset=utf-8', body: '' };
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = createServer((q, s) => {
      seen.push(q.url ?? '');
      s.writeHead(answer.status, { 'Content-Type': answer.type, ...(answer.framing ?? { 'X-Frame-Options': 'SAMEORIGIN' }) });
      s.end(answer.body);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const shell = createShell({ upstreamBase: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/prefix`, basePath: '/mlflow', timeoutMs: 5000 });
    flowgate = createServer((q, s) => void shell(q, s, new URL(q.url ?? '/', 'http://x').search.slice(1)));
    await new Promise<void>((r) => flowgate.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(flowgate.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    upstream.close();
    flowgate.close();
  });

  it('answers MLflow’s page with the menu added, MLflow’s own headers kept, and the length right', async () => {
    answer = { status: 200, type: 'text/html; charset=utf-8', body: '<html><head></head><body>é</body></html>' };
    const r = await fetch(`${url}/?a=1`);
    const text = await r.text();
    expect(seen.at(-1)).toBe('/prefix/?a=1');
    expect(text).toContain('<script defer src="/mlflow/flowgate/ui/assets/menu.js"></script></head>');
    expect(r.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(text));
  });

  it('is SAMEORIGIN where MLflow says nothing about framing (before 3.5, or its middleware off), and keeps what MLflow says', async () => {
    const framing = async (given: Record<string, string>) => {
      answer = { status: 200, type: 'text/html; charset=utf-8', body: '<html><head></head><body></body></html>', framing: given };
      const r = await fetch(`${url}/`);
      await r.text();
      return [r.headers.get('x-frame-options'), r.headers.get('content-security-policy')];
    };
    try {
      expect(await framing({})).toEqual(['SAMEORIGIN', null]);
      expect(await framing({ 'X-Frame-Options': 'DENY' })).toEqual(['DENY', null]);
      expect(await framing({ 'Content-Security-Policy': "frame-ancestors 'self' https://portal.example" })).toEqual([null, "frame-ancestors 'self' https://portal.example"]);
    } finally {
      answer = { status: 200, type: 'text/html; charset=utf-8', body: '' };
    }
  });

  it('answers in MLflow’s error shape when MLflow cannot be reached', async () => {
    const gone = createServer();
    await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
    const port = (gone.address() as AddressInfo).port;
    await new Promise<void>((r) => gone.close(() => r()));
    const down = createShell({ upstreamBase: `http://127.0.0.1:${port}`, basePath: '', timeoutMs: 5000 });
    const server = createServer((q, s) => void down(q, s, ''));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      expect(r.status).toBe(503);
      expect(await r.json()).toMatchObject({ error_code: 'TEMPORARILY_UNAVAILABLE' });
    } finally {
      server.close();
    }
  });

  it('answers 504 when MLflow stays silent past the timeout', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const slow = createShell({ upstreamBase: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, basePath: '', timeoutMs: 200 });
    const server = createServer((q, s) => void slow(q, s, ''));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      expect(r.status).toBe(504);
      expect(await r.json()).toMatchObject({ error_code: 'GATEWAY_TIMEOUT' });
    } finally {
      server.close();
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('passes an answer that is not an HTML page as it is', async () => {
    answer = { status: 503, type: 'application/json', body: '{"error_code":"X"}' };
    const r = await fetch(`${url}/`);
    expect(r.status).toBe(503);
    expect(await r.text()).toBe('{"error_code":"X"}');
  });
});
