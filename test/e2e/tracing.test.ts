import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { startOtlpReceiver, startRecordingPassThrough, type ReceivedSpan } from '../helpers/otlp-receiver.js';

/**
 * Issue 39, OpenTelemetry: flowgate in front of the real MLflow 3.17.2 (through a pass-through that
 * records what MLflow receives) sends its spans to an OTLP/HTTP receiver in the test. One trace per
 * request, continuing the client's `traceparent`; a server span with the route template, the verdict
 * and its reason; stage spans below it; the look-up and the forwarded call carry the trace to MLflow;
 * no token, user name, id or raw path in any span. The decision log goes out as OTLP log records,
 * masked as the JSON lines are.
 */

const SERVER = 2;
const CLIENT = 3;
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const USER = 'tracy-the-user';
const HIDDEN_EXPERIMENT = 'experiment-name-nobody-may-trace';

let mlflow: MlflowServer;
let passThrough: Awaited<ReturnType<typeof startRecordingPassThrough>>;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let experimentId: string;
let runId: string;
const dirs: string[] = [];

async function mlflowPost(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${mlflow.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

async function traced(env: Record<string, string> = {}): Promise<TestFlowgate> {
  const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: passThrough.url, ...env });
  dirs.push(fg.dir);
  return fg;
}

/** A user with READ on the experiment, and their token. */
async function reader(fg: TestFlowgate, username: string): Promise<string> {
  await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username }).expect(201);
  await request(fg.url).post(`/api/2.0/mlflow/permissions/users/${username}/experiments/${experimentId}`).set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
  return (await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username })).body.token as string;
}

const spansOf = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
/** The one span of that name (and kind, when given). */
const one = (spans: ReceivedSpan[], name: string, kind?: number) => {
  const found = spans.filter((s) => s.name === name && (kind === undefined || s.kind === kind));
  expect(found.map((s) => s.name), `one ${name} span among ${spans.map((s) => s.name).join(', ')}`).toEqual([name]);
  return found[0]!;
};
const parentOf = (span: ReceivedSpan, spans: ReceivedSpan[]) => spans.find((s) => s.spanId === span.parentSpanId);

beforeAll(async () => {
  mlflow = await startMlflowServer();
  passThrough = await startRecordingPassThrough(mlflow.url);
  receiver = await startOtlpReceiver();
  experimentId = (await mlflowPost('/api/2.0/mlflow/experiments/create', { name: HIDDEN_EXPERIMENT })).experiment_id as string;
  runId = ((await mlflowPost('/api/2.0/mlflow/runs/create', { experiment_id: experimentId })).run as { info: { run_id: string } }).info.run_id;
});

afterAll(async () => {
  await receiver?.close();
  await passThrough?.close();
  await mlflow?.stop();
  for (const dir of dirs) removeDir(dir);
});

describe('traces of requests through flowgate to MLflow 3.17.2', () => {
  it('continue the client trace: server span, stage spans, the look-up and the forward, and MLflow receives the same trace', async () => {
    const fg = await traced({ FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, FLOWGATE_OTEL_SERVICE_NAME: 'flowgate-under-test' });
    const token = await reader(fg, USER);
    const passedBefore = passThrough.passed.length;
    const res = await request(fg.url)
      .get(`/api/2.0/mlflow/runs/get?run_id=${runId}`)
      .set('Authorization', basic(USER, token))
      .set('traceparent', `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`)
      .set('tracestate', 'vendor=opaque')
      .set('Cookie', 'session-of-something=cookie-value-that-must-not-appear');
    expect(res.status, res.text).toBe(200);
    const atMlflow = passThrough.passed.slice(passedBefore);
    // Closing exports what the batch still holds.
    await fg.close();

    const spans = spansOf(CLIENT_TRACE);
    const server = one(spans, 'GET /api/2.0/mlflow/runs/get', SERVER);
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(server.service).toBe('flowgate-under-test');
    expect(server.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/2.0/mlflow/runs/get',
      'http.response.status_code': 200,
      'flowgate.decision': 'allow',
      'flowgate.reason': 'direct-grant',
      'flowgate.resource.kind': 'experiment',
      'flowgate.auth.method': 'basic',
      'flowgate.upstream.status_code': 200,
    });
    expect(server.attributes['flowgate.request_id']).toBe(res.headers['x-request-id']);

    const authenticate = one(spans, 'authenticate');
    const decide = one(spans, 'decide');
    const forward = one(spans, 'forward');
    for (const child of [authenticate, decide, forward]) expect(child.parentSpanId).toBe(server.spanId);
    // The run's experiment was not cached: resolving it asked MLflow, under the decision.
    const resolve = one(spans, 'resolve');
    const evaluate = one(spans, 'evaluate');
    expect(resolve.parentSpanId).toBe(decide.spanId);
    expect(evaluate.parentSpanId).toBe(decide.spanId);
    const lookup = one(spans, 'GET /api/2.0/mlflow/runs/get', CLIENT);
    expect(parentOf(lookup, spans)?.name).toBe('resolve');
    expect(lookup.attributes).toMatchObject({ 'url.template': '/api/2.0/mlflow/runs/get', 'http.response.status_code': 200 });
    expect(forward.kind).toBe(CLIENT);
    expect(forward.attributes).toMatchObject({ 'http.route': '/api/2.0/mlflow/runs/get', 'http.response.status_code': 200 });

    // What MLflow received: the look-up and the forwarded call, each naming its own span in the same trace.
    const parents = atMlflow.map((r) => String(r.headers.traceparent));
    expect(atMlflow.map((r) => r.url.split('?')[0])).toEqual(['/api/2.0/mlflow/runs/get', '/api/2.0/mlflow/runs/get']);
    expect(parents).toEqual([`00-${CLIENT_TRACE}-${lookup.spanId}-01`, `00-${CLIENT_TRACE}-${forward.spanId}-01`]);
    expect(atMlflow.map((r) => r.headers.tracestate)).toEqual(['vendor=opaque', 'vendor=opaque']);

    // Nothing the caller sent or could not see is in any span: only templates, verdicts and statuses.
    const exported = receiver.raw.join('\n');
    for (const secret of [token, ADMIN.token, USER, runId, HIDDEN_EXPERIMENT, 'cookie-value-that-must-not-appear', `run_id=${runId}`])
      expect(exported).not.toContain(secret);
  });

  it('start a trace of their own without a client traceparent, and label a refusal with its reason and no forward', async () => {
    const fg = await traced({ FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces` });
    const token = await reader(fg, 'refused-reader');
    const before = receiver.spans.length;
    const passedBefore = passThrough.passed.length;
    await request(fg.url).post('/api/2.0/mlflow/experiments/update').set('Authorization', basic('refused-reader', token)).send({ experiment_id: experimentId, new_name: 'x' }).expect(403);
    expect(passThrough.passed.length).toBe(passedBefore);
    await fg.close();
    const server = receiver.spans.slice(before).find((s) => s.name === 'POST /api/2.0/mlflow/experiments/update')!;
    expect(server.parentSpanId).toBeUndefined();
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 403, 'flowgate.decision': 'deny', 'flowgate.reason': 'direct-grant' });
    const spans = spansOf(server.traceId);
    expect(spans.map((s) => s.name).sort()).toEqual(['POST /api/2.0/mlflow/experiments/update', 'authenticate', 'decide', 'evaluate', 'resolve'].sort());
    // A refusal is the decision, not a failure of the stage.
    expect(one(spans, 'decide').status.code ?? 0).toBe(0);
    expect(one(spans, 'decide').attributes['flowgate.error_code']).toBe('PERMISSION_DENIED');
  });

  it('are sampled by flowgate ratio, whatever flag the client sets; the trace still reaches MLflow', async () => {
    const fg = await traced({ FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, FLOWGATE_OTEL_SAMPLE_RATIO: '0' });
    const passedBefore = passThrough.passed.length;
    const forced = 'aaaabbbbccccddddeeeeffff00001111';
    await request(fg.url).get(`/api/2.0/mlflow/experiments/get?experiment_id=${experimentId}`).set('Authorization', adminAuth()).set('traceparent', `00-${forced}-${CLIENT_SPAN}-01`).expect(200);
    await fg.close();
    expect(spansOf(forced)).toEqual([]);
    const sent = String(passThrough.passed.slice(passedBefore).at(-1)?.headers.traceparent);
    expect(sent).toMatch(new RegExp(`^00-${forced}-[0-9a-f]{16}-00$`));
    expect(sent).not.toContain(CLIENT_SPAN);
  });
});

describe('the decision log as OTLP log records', () => {
  it('sends each decision masked, linked to the request trace, and never the user, the ids or a token', async () => {
    const key = Buffer.alloc(32, 9).toString('base64');
    const fg = await traced({
      FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      FLOWGATE_DECISION_LOG: 'otlp',
      FLOWGATE_OTEL_LOGS_ENDPOINT: `${receiver.url}/v1/logs`,
      FLOWGATE_DECISION_LOG_MASK: 'user,resources',
      FLOWGATE_DECISION_LOG_MASK_KEY: key,
    });
    const token = await reader(fg, 'masked-reader');
    const logsBefore = receiver.logs.length;
    await request(fg.url).get(`/api/2.0/mlflow/experiments/get?experiment_id=${experimentId}`).set('Authorization', basic('masked-reader', token)).set('traceparent', `00-${'c'.repeat(32)}-${CLIENT_SPAN}-01`).expect(200);
    await request(fg.url).post('/api/2.0/mlflow/experiments/delete').set('Authorization', basic('masked-reader', token)).send({ experiment_id: experimentId }).expect(403);
    await fg.close();
    const events = receiver.logs.slice(logsBefore).filter((l) => (l.body as { admin?: boolean }).admin === false);
    expect(events.map((e) => (e.body as { decision: string }).decision)).toEqual(['allow', 'deny']);
    const [allowed, denied] = events as [(typeof events)[number], (typeof events)[number]];
    expect(allowed.eventName).toBe('flowgate.decision');
    expect(allowed.service).toBe('flowgate');
    expect(allowed.attributes).toMatchObject({ 'flowgate.decision': 'allow', 'flowgate.reason': 'direct-grant' });
    expect(allowed.body).toMatchObject({ via: 'basic', admin: false, route: '/api/2.0/mlflow/experiments/get', decision: 'allow', reason: 'direct-grant' });
    expect(denied.body).toMatchObject({ route: '/api/2.0/mlflow/experiments/delete', decision: 'deny' });
    expect(denied.severityText).toBe('WARN');
    const resources = (allowed.body as { resources: { kind: string; id: string }[] }).resources;
    expect(resources).toEqual([{ kind: 'experiment', id: expect.stringMatching(/^~[A-Za-z0-9_-]{22}$/) }]);
    expect((allowed.body as { policyGeneration: number }).policyGeneration).toBeGreaterThan(0);
    // The event names the trace of the request it decided, for a jump from the SIEM to the trace.
    expect(allowed.traceId).toBe('c'.repeat(32));
    const exported = receiver.raw.join('\n');
    for (const secret of [token, ADMIN.token, 'masked-reader', HIDDEN_EXPERIMENT, `"${experimentId}"`]) expect(exported).not.toContain(secret);
  });
});
