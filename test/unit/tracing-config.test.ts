import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Env } from '../../src/config.js';

/** The OpenTelemetry settings: off unless an endpoint is set, and the OTLP decision log tied to its endpoint. */
const problems = (env: Env): string[] => {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    return (err as ConfigError).problems;
  }
};

describe('tracing settings', () => {
  it('leave tracing off by default', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({}).decisionLog.otlp).toBeUndefined();
  });

  it('turn it on with a traces endpoint, with the service name and sample ratio', () => {
    expect(
      loadConfig({ FLOWGATE_OTEL_TRACES_ENDPOINT: 'http://collector:4318/v1/traces', FLOWGATE_OTEL_SERVICE_NAME: 'gate-a', FLOWGATE_OTEL_SAMPLE_RATIO: '0.25' }).tracing,
    ).toEqual({ endpoint: 'http://collector:4318/v1/traces', serviceName: 'gate-a', sampleRatio: 0.25 });
    expect(loadConfig({ FLOWGATE_OTEL_TRACES_ENDPOINT: 'https://collector/v1/traces' }).tracing).toMatchObject({ serviceName: 'flowgate', sampleRatio: 1 });
  });

  it('refuse a ratio outside 0..1 and an endpoint that is not an http URL', () => {
    expect(problems({ FLOWGATE_OTEL_SAMPLE_RATIO: '1.5' })).toEqual([expect.stringMatching(/^FLOWGATE_OTEL_SAMPLE_RATIO: /)]);
    expect(problems({ FLOWGATE_OTEL_TRACES_ENDPOINT: 'grpc://collector:4317' })).toEqual([expect.stringMatching(/^FLOWGATE_OTEL_TRACES_ENDPOINT: /)]);
  });

  it('send the decision log over OTLP only with a logs endpoint, and take the endpoint only for it', () => {
    expect(problems({ FLOWGATE_DECISION_LOG: 'otlp' })).toEqual(['FLOWGATE_OTEL_LOGS_ENDPOINT: required when FLOWGATE_DECISION_LOG=otlp']);
    expect(problems({ FLOWGATE_OTEL_LOGS_ENDPOINT: 'http://collector:4318/v1/logs' })).toEqual(['FLOWGATE_OTEL_LOGS_ENDPOINT: set only with FLOWGATE_DECISION_LOG=otlp']);
    expect(loadConfig({ FLOWGATE_DECISION_LOG: 'otlp', FLOWGATE_OTEL_LOGS_ENDPOINT: 'http://collector:4318/v1/logs' }).decisionLog).toMatchObject({
      destination: 'otlp',
      otlp: { endpoint: 'http://collector:4318/v1/logs', serviceName: 'flowgate' },
    });
  });
});
