import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';
import { mlflowVenv, serveModel, trainAndRegister, type RunningModelServer } from '../helpers/model-server.js';
import { chunked, rawExchange, watchWire, type RawRequest, type WireWatch } from './harness/raw-http.js';

/**
 * Request smuggling through flowgate: a request flowgate checked must reach the upstream as exactly
 * that one request, whatever its method and however the client framed its body. The body of every
 * request below is itself a complete HTTP request (an unload of another model, the model server's
 * /metrics, a tracking call): an upstream that reads it as a second request got something flowgate
 * never saw. The upstreams are Node HTTP servers (llhttp, the parser of uvicorn's httptools) that
 * record every request they parse; the last part runs the same attack against `mlflow models serve`.
 */

const IRIS_KEY = 'framing-iris-only-key-0123456789abcdef';
const METHODS = ['GET', 'HEAD', 'DELETE', 'OPTIONS', 'POST', 'PUT', 'PATCH'] as const;

/** Two complete requests for the model server: unload another model, then read /metrics. */
const MODEL_SMUGGLE =
  'POST /v2/repository/models/fraud/unload HTTP/1.1\r\nHost: model\r\nContent-Length: 0\r\n\r\n' + 'GET /metrics HTTP/1.1\r\nHost: model\r\n\r\n';
const TRACKING_BODY = '{"experiment_id":"0"}';
/** A tracking call without credentials, which flowgate would refuse (401). */
const TRACKING_SMUGGLE = `POST /api/2.0/mlflow/experiments/delete HTTP/1.1\r\nHost: mlflow\r\nContent-Type: application/json\r\nContent-Length: ${TRACKING_BODY.length}\r\n\r\n${TRACKING_BODY}`;

interface Listener {
  readonly name: string;
  /** The path the client sends, and the path the upstream must see. */
  readonly path: string;
  readonly forwardedPath: string;
  readonly credentials: string;
  readonly smuggle: string;
  readonly upstream: () => { seen: SeenRequest[]; wire: WireWatch };
}

interface Framing {
  readonly name: string;
  readonly request: (method: string, path: string, credentials: string, payload: string) => RawRequest;
  /** What the upstream must read as the body; undefined: flowgate must refuse the request. */
  readonly forwardedBody: (payload: string) => string | undefined;
}

const line = (method: string, path: string, credentials: string, ...headers: string[]) => [
  `${method} ${path} HTTP/1.1`,
  'Host: flowgate.example.com',
  credentials,
  ...headers,
];

const FRAMINGS: readonly Framing[] = [
  { name: 'no body', request: (m, p, c) => ({ head: line(m, p, c) }), forwardedBody: () => '' },
  { name: 'Content-Length: 0', request: (m, p, c) => ({ head: line(m, p, c, 'Content-Length: 0'), body: '' }), forwardedBody: () => '' },
  {
    name: 'Content-Length: N',
    request: (m, p, c, b) => ({ head: line(m, p, c, `Content-Length: ${b.length}`), body: b }),
    forwardedBody: (b) => b,
  },
  {
    name: 'chunked',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Transfer-Encoding: chunked'), body: chunked(b) }),
    forwardedBody: (b) => b,
  },
  {
    name: 'chunked, spelled Chunked',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Transfer-Encoding: Chunked'), body: chunked(b) }),
    forwardedBody: (b) => b,
  },
  {
    name: 'chunked with trailers',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Transfer-Encoding: chunked', 'Trailer: X-Checksum'), body: chunked(b, ['X-Checksum: 42']) }),
    forwardedBody: (b) => b,
  },
  {
    name: 'Expect: 100-continue with Content-Length',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Expect: 100-continue', `Content-Length: ${b.length}`), body: b, awaitContinue: true }),
    forwardedBody: (b) => b,
  },
  {
    name: 'Expect: 100-continue, chunked',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Expect: 100-continue', 'Transfer-Encoding: chunked'), body: chunked(b), awaitContinue: true }),
    forwardedBody: (b) => b,
  },
  {
    name: 'Transfer-Encoding and Content-Length both',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Transfer-Encoding: chunked', `Content-Length: ${b.length}`), body: chunked(b) }),
    forwardedBody: () => undefined,
  },
  {
    name: 'Transfer-Encoding: gzip',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Transfer-Encoding: gzip'), body: b }),
    forwardedBody: () => undefined,
  },
  {
    name: 'Transfer-Encoding: gzip, chunked',
    request: (m, p, c, b) => ({ head: line(m, p, c, 'Transfer-Encoding: gzip, chunked'), body: chunked(b) }),
    forwardedBody: () => undefined,
  },
];

/** Time for an upstream to parse whatever else arrived behind the answered request. */
const settle = () => new Promise((r) => setTimeout(r, 150));

describe('every forwarded request reaches its upstream as exactly one request', () => {
  let fg: TestFlowgate;
  let mlflow: Awaited<ReturnType<typeof startStubUpstream>>;
  let model: Awaited<ReturnType<typeof startStubUpstream>>;
  let mlflowWire: WireWatch;
  let modelWire: WireWatch;
  let port: number;
  const dir = mkdtempSync(join(tmpdir(), 'fg-framing-'));

  const LISTENERS: readonly Listener[] = [
    {
      name: 'inference route (key for model iris only)',
      path: '/models/iris/v2/models/iris/infer',
      forwardedPath: '/v2/models/iris/infer',
      credentials: `x-api-key: ${IRIS_KEY}`,
      smuggle: MODEL_SMUGGLE,
      upstream: () => ({ seen: model.seen, wire: modelWire }),
    },
    {
      name: 'tracking route to MLflow (administrator)',
      path: '/api/2.0/mlflow/framing-probe',
      forwardedPath: '/api/2.0/mlflow/framing-probe',
      credentials: `Authorization: ${adminAuth()}`,
      smuggle: TRACKING_SMUGGLE,
      upstream: () => ({ seen: mlflow.seen, wire: mlflowWire }),
    },
  ];

  beforeAll(async () => {
    mlflow = await startStubUpstream();
    model = await startStubUpstream();
    mlflowWire = watchWire(mlflow.server);
    modelWire = watchWire(model.server);
    const keys = join(dir, 'keys.yaml');
    writeFileSync(keys, `keys:\n  - { id: iris-only, value: ${IRIS_KEY}, routes: [iris], models: [iris] }\n`);
    const config = join(dir, 'inference.yaml');
    writeFileSync(
      config,
      `routes:\n` +
        `  - { name: iris, upstream: "${model.url}", pathPrefix: /models/iris, stripPrefix: true, model: iris }\n` +
        `  - { name: fraud, upstream: "${model.url}", pathPrefix: /models/fraud, stripPrefix: true, model: fraud }\n` +
        `apiKeys: { file: "${keys}" }\n`,
    );
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_INFERENCE_CONFIG_FILE: config });
    port = Number(new URL(fg.url).port);
  });

  afterAll(async () => {
    await fg?.close();
    await mlflow?.close();
    await model?.close();
    if (fg) removeDir(fg.dir);
    removeDir(dir);
  });

  /** Sends one request and returns the answer and what the upstream made of it. */
  async function attempt(listener: Listener, request: RawRequest) {
    const { seen, wire } = listener.upstream();
    const before = seen.length;
    wire.reset();
    const answer = await rawExchange(port, request);
    await settle();
    return { answer, received: seen.slice(before), parseErrors: [...wire.parseErrors], bytes: wire.bytes() };
  }

  it.each(['DELETE', 'OPTIONS'])(
    'a %s keyed for model iris carries neither an unload of model fraud nor a /metrics read in its chunked body',
    async (method) => {
      const listener = LISTENERS[0]!;
      const { answer, received, bytes } = await attempt(listener, {
        head: line(method, '/models/iris/v2/models/iris', listener.credentials, 'Transfer-Encoding: chunked'),
        body: chunked(MODEL_SMUGGLE),
      });
      expect(answer.status).toBe(200);
      const targets = received.map((r) => `${r.method} ${r.url}`);
      expect(targets, bytes).not.toContain('POST /v2/repository/models/fraud/unload');
      expect(targets, bytes).not.toContain('GET /metrics');
      expect(received.map((r) => ({ method: r.method, url: r.url, body: r.body })), bytes).toEqual([
        { method, url: '/v2/models/iris', body: MODEL_SMUGGLE },
      ]);
    },
  );

  describe.each(LISTENERS.map((l) => [l.name, l] as const))('%s', (_name, listener) => {
    const cases = METHODS.flatMap((method) => FRAMINGS.map((framing) => [method, framing.name, framing] as const));

    it.each(cases)('%s with %s', async (method, _framing, framing) => {
      const request = framing.request(method, listener.path, listener.credentials, listener.smuggle);
      const { answer, received, parseErrors, bytes } = await attempt(listener, request);
      const body = framing.forwardedBody(listener.smuggle);
      if (body === undefined) {
        // Refused before anything is forwarded, in MLflow's error shape.
        expect(answer.status).toBe(400);
        expect(answer.headers['content-type']).toBe('application/json');
        // A HEAD answer has no body to read the error from.
        if (method !== 'HEAD') expect(JSON.parse(answer.body)).toMatchObject({ error_code: 'BAD_REQUEST', message: expect.any(String) });
        expect(received, bytes).toEqual([]);
        expect(bytes).toBe('');
        return;
      }
      expect(answer.status, answer.body).toBe(200);
      expect(parseErrors, bytes).toEqual([]);
      expect(received.map((r) => ({ method: r.method, url: r.url, body: r.body })), bytes).toEqual([{ method, url: listener.forwardedPath, body }]);
      const headers = received[0]!.headers;
      // Framing and Expect belong to the client's hop: flowgate frames its own request.
      expect(headers.expect).toBeUndefined();
      expect(headers.trailer).toBeUndefined();
      expect([undefined, 'chunked']).toContain(headers['transfer-encoding']);
      if (headers['transfer-encoding']) expect(headers['content-length']).toBeUndefined();
    });
  });
});

describe('against mlflow models serve', () => {
  const MODEL = 'flowgate-framing-classifier';
  const KEY = 'framing-classifier-key-0123456789abcdef';
  let dir: string;
  let served: RunningModelServer | undefined;
  let mlflow: Awaited<ReturnType<typeof startStubUpstream>> | undefined;
  let fg: TestFlowgate | undefined;

  beforeAll(async () => {
    const venv = await mlflowVenv();
    dir = mkdtempSync(join(tmpdir(), 'fg-framing-serve-'));
    await trainAndRegister(venv, dir, MODEL);
    served = await serveModel(venv, dir, MODEL);
    mlflow = await startStubUpstream();
    writeFileSync(join(dir, 'keys.yaml'), `keys:\n  - { id: classifier-only, value: ${KEY}, routes: [classifier], models: [${MODEL}] }\n`);
    writeFileSync(
      join(dir, 'inference.yaml'),
      `routes:\n  - { name: classifier, upstream: "${served.url}", pathPrefix: /models/classifier, stripPrefix: true, model: ${MODEL} }\n` +
        `apiKeys: { file: "${join(dir, 'keys.yaml')}" }\n`,
    );
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_INFERENCE_CONFIG_FILE: join(dir, 'inference.yaml') });
  }, 20 * 60_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.close();
    await served?.stop();
    if (fg) removeDir(fg.dir);
    if (dir) removeDir(dir);
  });

  it.each(['DELETE', 'OPTIONS'])('a keyed %s with a chunked body never delivers the request inside it', async (method) => {
    const marker = `/smuggled-${randomUUID()}`;
    const smuggled = `GET ${marker} HTTP/1.1\r\nHost: model\r\n\r\n`;
    // The control: sent straight to the model server on one connection, the same bytes framed as a
    // request without a body do deliver the inner request, which the server logs.
    const control = `/control-${randomUUID()}`;
    await rawExchange(Number(new URL(served!.url).port), {
      head: [`${method} /ping HTTP/1.1`, 'Host: model', 'Content-Length: 0'],
      body: `GET ${control} HTTP/1.1\r\nHost: model\r\n\r\n`,
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(served!.output()).toContain(control);

    const logBefore = served!.output().length;
    const answer = await rawExchange(Number(new URL(fg!.url).port), {
      head: [`${method} /models/classifier/ping HTTP/1.1`, 'Host: flowgate.example.com', `x-api-key: ${KEY}`, 'Transfer-Encoding: chunked'],
      body: chunked(smuggled),
    });
    expect(answer.status).toBeLessThan(500);
    await new Promise((r) => setTimeout(r, 1000));
    const log = served!.output().slice(logBefore);
    expect(log).toContain(`"${method} /ping HTTP/1.1"`);
    expect(log).not.toContain(marker);
  });
});
