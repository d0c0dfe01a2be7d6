import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';

/**
 * Issue 39, "W3C traceparent propagated to MLflow so MLflow's own spans join": the pinned MLflow
 * 3.17.2 run under OpenTelemetry's zero-code instrumentation (`opentelemetry-instrument mlflow server`,
 * from the venv scripts/mlflow-otel-venv.sh makes, FastAPI and Flask instrumented), exporting OTLP
 * protobuf to the same receiver as flowgate. One request through flowgate makes one trace: flowgate's
 * server span, its look-up and forward spans, and under each of those MLflow's own server span.
 */

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const SERVER = 2;
const CLIENT = 3;
const CLIENT_TRACE = '5cf92f3577b34da6a3ce929d0e0e4737';
const CLIENT_SPAN = '10f067aa0ba902b8';

let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let mlflow: MlflowServer;
let fg: TestFlowgate;

/** Makes (first time: minutes) or reuses the instrumented MLflow's venv. */
function mlflowOtelVenv(): Promise<string> {
  return new Promise((resolvePath, reject) => {
    execFile('bash', [join(REPO_ROOT, 'scripts/mlflow-otel-venv.sh')], { maxBuffer: 1 << 20, timeout: 900_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`scripts/mlflow-otel-venv.sh failed: ${error.message}\n${stderr}`));
      else resolvePath(stdout.trim().split('\n').pop() ?? '');
    });
  });
}

beforeAll(async () => {
  const venv = await mlflowOtelVenv();
  receiver = await startOtlpReceiver();
  mlflow = await startMlflowServer({
    venv,
    launcher: 'opentelemetry-instrument',
    env: {
      OTEL_SERVICE_NAME: 'mlflow-under-test',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      // Export each batch at once rather than every 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  fg = await startTestFlowgate({
    FLOWGATE_UPSTREAM_URL: mlflow.url,
    FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    FLOWGATE_OTEL_SERVICE_NAME: 'flowgate-under-test',
  });
}, 900_000);

afterAll(async () => {
  await fg?.close();
  await mlflow?.stop();
  await receiver?.close();
  if (fg) removeDir(fg.dir);
});

const one = (spans: ReceivedSpan[], what: string, test: (s: ReceivedSpan) => boolean) => {
  const found = spans.filter(test);
  expect(found.length, `one ${what} among ${spans.map((s) => `${String(s.service)}:${s.name}(${s.kind})`).join(', ')}`).toBe(1);
  return found[0]!;
};

/** Waits for the spans of a trace until `done` holds for them (MLflow exports on its own schedule). */
async function spansOf(traceId: string, done: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    if (done(spans) || Date.now() > deadline) return spans;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("MLflow's own spans join flowgate's trace", () => {
  it("MLflow's server span is a child of flowgate's look-up and of its forward, all in the client's trace", async () => {
    // A reader's request: flowgate resolves the run's experiment by asking MLflow, then forwards.
    const experimentId = (await request(fg.url).post('/api/2.0/mlflow/experiments/create').set('Authorization', adminAuth()).send({ name: 'traced-together' }).expect(200)).body
      .experiment_id as string;
    const runId = (await request(fg.url).post('/api/2.0/mlflow/runs/create').set('Authorization', adminAuth()).send({ experiment_id: experimentId }).expect(200)).body.run.info
      .run_id as string;
    await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'traced-reader' }).expect(201);
    await request(fg.url).post(`/api/2.0/mlflow/permissions/users/traced-reader/experiments/${experimentId}`).set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
    const token = (await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'traced-reader' })).body
      .token as string;

    await request(fg.url).get(`/api/2.0/mlflow/runs/get?run_id=${runId}`).set('Authorization', basic('traced-reader', token)).set('traceparent', `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`).expect(200);

    const fromMlflow = (s: ReceivedSpan) => s.service === 'mlflow-under-test';
    const spans = await spansOf(CLIENT_TRACE, (found) => found.filter((s) => fromMlflow(s) && s.kind === SERVER).length >= 2 && found.some((s) => s.name === 'forward'));
    const server = one(spans, "flowgate's server span", (s) => s.service === 'flowgate-under-test' && s.kind === SERVER);
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(server.name).toBe('GET /api/2.0/mlflow/runs/get');
    const forward = one(spans, "flowgate's forward span", (s) => s.name === 'forward' && s.kind === CLIENT);
    expect(forward.parentSpanId).toBe(server.spanId);
    const lookup = one(spans, "flowgate's look-up", (s) => s.service === 'flowgate-under-test' && s.name === 'GET /api/2.0/mlflow/runs/get' && s.kind === CLIENT);

    // MLflow's own server spans (the instrumented FastAPI app it serves through), one per call flowgate made.
    const mlflowServers = spans.filter((s) => fromMlflow(s) && s.kind === SERVER);
    const underForward = one(mlflowServers, "MLflow's server span under the forward", (s) => s.parentSpanId === forward.spanId);
    const underLookup = one(mlflowServers, "MLflow's server span under the look-up", (s) => s.parentSpanId === lookup.spanId);
    // The instrumented FastAPI app's span names the method only (the tracking API is a Flask app mounted inside it).
    for (const s of [underForward, underLookup]) expect(s.attributes['http.target']).toBe('/api/2.0/mlflow/runs/get');
    // Inside each, Flask's own span for the route, so the trace reaches MLflow's handler.
    for (const s of [underForward, underLookup]) {
      const flask = one(spans, `Flask's span under ${s.spanId}`, (x) => fromMlflow(x) && x.parentSpanId === s.spanId && x.name === 'GET /api/2.0/mlflow/runs/get');
      expect(flask.attributes).toMatchObject({ 'http.route': '/api/2.0/mlflow/runs/get', 'http.status_code': 200 });
    }
    // Every span MLflow made for these calls (Flask's inside FastAPI's included) hangs from one of the two.
    const ids = new Map(spans.map((s) => [s.spanId, s]));
    const rootOf = (s: ReceivedSpan): ReceivedSpan => {
      let at = s;
      while (at.parentSpanId && ids.has(at.parentSpanId) && fromMlflow(ids.get(at.parentSpanId)!)) at = ids.get(at.parentSpanId)!;
      return at;
    };
    const mlflowSpans = spans.filter(fromMlflow);
    expect(mlflowSpans.length).toBeGreaterThanOrEqual(2);
    for (const s of mlflowSpans) expect([underForward.spanId, underLookup.spanId]).toContain(rootOf(s).spanId);
  });
});
