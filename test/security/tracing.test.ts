import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { startOtlpReceiver, startRecordingPassThrough } from '../helpers/otlp-receiver.js';

/**
 * Trace Context headers as an attacker writes them, against flowgate with tracing on in front of the
 * real MLflow: malformed, oversized or repeated `traceparent`s are ignored (a fresh trace, never the
 * attacker's ids), a `tracestate` is cut to its valid members within the W3C bounds, and no request
 * fails because of them. With tracing off they pass as any other header and break nothing either.
 */
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const WELL_FORMED = /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/;

const ATTACKS: readonly { name: string; traceparent: string | string[]; tracestate?: string }[] = [
  { name: 'oversized traceparent', traceparent: `00-${TRACE}-${SPAN}-01-${'a'.repeat(12_000)}` },
  { name: 'future version, oversized', traceparent: `cc-${TRACE}-${SPAN}-01-${'b'.repeat(12_000)}` },
  { name: 'all-zero ids', traceparent: `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01` },
  { name: 'version ff', traceparent: `ff-${TRACE}-${SPAN}-01` },
  { name: 'not hex', traceparent: `00-${'g'.repeat(32)}-${SPAN}-01` },
  { name: 'script in it', traceparent: `00-<script>alert(1)</script>-${SPAN}-01` },
  { name: 'two traceparents', traceparent: [`00-${TRACE}-${SPAN}-01`, `00-${'1'.repeat(32)}-${SPAN}-01`] },
  { name: 'empty', traceparent: '' },
  { name: 'oversized tracestate', traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: `k=${'v'.repeat(12_000)}` },
  {
    name: 'tracestate with junk and too many members',
    traceparent: `00-${TRACE}-${SPAN}-01`,
    tracestate: [...Array.from({ length: 60 }, (_, i) => `m${i}=x`), 'UPPER=1', 'k=a,b', '=x', 'k2=\t'].join(','),
  },
];

let mlflow: MlflowServer;
let passThrough: Awaited<ReturnType<typeof startRecordingPassThrough>>;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let on: TestFlowgate;
let off: TestFlowgate;

beforeAll(async () => {
  mlflow = await startMlflowServer();
  passThrough = await startRecordingPassThrough(mlflow.url);
  receiver = await startOtlpReceiver();
  on = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: passThrough.url, FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces` });
  off = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: passThrough.url });
});

afterAll(async () => {
  for (const fg of [on, off]) {
    await fg?.close();
    if (fg) removeDir(fg.dir);
  }
  await receiver?.close();
  await passThrough?.close();
  await mlflow?.stop();
});

function send(fg: TestFlowgate, attack: (typeof ATTACKS)[number]) {
  // An array goes out as repeated header lines.
  const call = request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=0').set('Authorization', adminAuth()).set('traceparent', attack.traceparent as string);
  return attack.tracestate === undefined ? call : call.set('tracestate', attack.tracestate);
}

describe('malicious Trace Context headers', () => {
  it.each(ATTACKS)('tracing on, $name: answered as usual; MLflow gets a well-formed parent of flowgate own and a bounded tracestate', async (attack) => {
    const before = passThrough.passed.length;
    const res = await send(on, attack);
    expect(res.status, res.text).toBe(200);
    expect(res.body.experiment.experiment_id).toBe('0');
    const atMlflow = passThrough.passed.slice(before);
    expect(atMlflow).toHaveLength(1);
    const { traceparent } = atMlflow[0]!.headers;
    const tracestate = atMlflow[0]!.headers.tracestate as string | undefined;
    expect(traceparent).toMatch(WELL_FORMED);
    // Flowgate's forward span is the parent MLflow sees, never the span the client named.
    expect(String(traceparent).split('-')[2]).not.toBe(SPAN);
    if (tracestate !== undefined) {
      expect(tracestate.length).toBeLessThanOrEqual(512);
      expect(tracestate.split(',').length).toBeLessThanOrEqual(32);
      for (const member of tracestate.split(',')) expect(member).toMatch(/^[a-z0-9][a-z0-9_\-*/@]*=[\x20-\x2b\x2d-\x3c\x3e-\x7e]*[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/);
    }
    // Only a well-formed parent with a bounded state is continued: the malformed ones start a trace of flowgate's own.
    const continued = String(traceparent).slice(3, 35) === TRACE;
    expect(continued).toBe(attack.traceparent === `00-${TRACE}-${SPAN}-01`);
  });

  it.each(ATTACKS)('tracing off, $name: answered as usual', async (attack) => {
    const res = await send(off, attack);
    expect(res.status, res.text).toBe(200);
    expect(res.body.experiment.experiment_id).toBe('0');
  });

  it('none of the attack text reaches the exported spans', async () => {
    for (const attack of ATTACKS) await send(on, attack).expect(200);
    // The batch is exported when flowgate closes (this one's spans and those of the attacks above); a new one takes its place for the afterAll.
    await on.close();
    on = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: passThrough.url, FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces` }, on.dir);
    const servers = receiver.spans.filter((s) => s.kind === 2);
    expect(servers).toHaveLength(2 * ATTACKS.length);
    const exported = receiver.raw.join('\n');
    for (const needle of ['<script>', 'aaaaaaaaaaaaaaaa', 'vvvvvvvvvvvvvvvv', 'gggggggggggggggg']) expect(exported).not.toContain(needle);
    // The remote parents flowgate accepted are the well-formed ones only.
    const parents = new Set(servers.map((s) => s.parentSpanId).filter(Boolean));
    expect([...parents]).toEqual([SPAN]);
  });
});
