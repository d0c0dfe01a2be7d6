import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate } from '../helpers/flowgate.js';
import { startOtlpReceiver } from '../helpers/otlp-receiver.js';

/**
 * Tracing off (no FLOWGATE_OTEL_TRACES_ENDPOINT): no exporter, no tracer, nothing added to what MLflow
 * receives. The exporters are wrapped in counting spies; the tracing-on case proves the spies see a
 * flowgate that does make one.
 */
const made = vi.hoisted(() => ({ traces: [] as unknown[], logs: [] as unknown[] }));

vi.mock('@opentelemetry/exporter-trace-otlp-http', async (importOriginal) => {
  const original = await importOriginal<typeof import('@opentelemetry/exporter-trace-otlp-http')>();
  return {
    OTLPTraceExporter: class extends original.OTLPTraceExporter {
      constructor(...args: ConstructorParameters<typeof original.OTLPTraceExporter>) {
        super(...args);
        made.traces.push(args[0]);
      }
    },
  };
});
vi.mock('@opentelemetry/exporter-logs-otlp-http', async (importOriginal) => {
  const original = await importOriginal<typeof import('@opentelemetry/exporter-logs-otlp-http')>();
  return {
    OTLPLogExporter: class extends original.OTLPLogExporter {
      constructor(...args: ConstructorParameters<typeof original.OTLPLogExporter>) {
        super(...args);
        made.logs.push(args[0]);
      }
    },
  };
});

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
beforeAll(async () => {
  upstream = await startStubUpstream();
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await upstream?.close();
  await receiver?.close();
});

describe('tracing configuration', () => {
  it('off: no exporter is made and MLflow receives no trace context flowgate made up', async () => {
    const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DECISION_LOG: 'stdout' });
    try {
      await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=1').set('Authorization', adminAuth()).expect(200);
      expect(upstream.seen.at(-1)?.headers.traceparent).toBeUndefined();
      expect(made).toEqual({ traces: [], logs: [] });
    } finally {
      await fg.close();
      removeDir(fg.dir);
    }
  });

  it('on: one trace exporter to the configured endpoint, and one logs exporter only for the OTLP decision log', async () => {
    const fg = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: upstream.url,
      FLOWGATE_OTEL_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      FLOWGATE_DECISION_LOG: 'otlp',
      FLOWGATE_OTEL_LOGS_ENDPOINT: `${receiver.url}/v1/logs`,
    });
    try {
      await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=1').set('Authorization', adminAuth()).expect(200);
      expect(String(upstream.seen.at(-1)?.headers.traceparent)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(made.traces).toEqual([expect.objectContaining({ url: `${receiver.url}/v1/traces` })]);
      expect(made.logs).toEqual([expect.objectContaining({ url: `${receiver.url}/v1/logs` })]);
    } finally {
      await fg.close();
      removeDir(fg.dir);
    }
  });
});
