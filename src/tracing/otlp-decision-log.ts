import { SeverityNumber } from '@opentelemetry/api';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import type { DecisionEvent, DecisionSink } from '../proxy/decision-log.js';
import { VERSION } from '../version.js';
import { shutdownWithin } from './bounded-shutdown.js';
import { serviceResource } from './service-resource.js';

export interface OtlpDecisionLog {
  readonly write: DecisionSink;
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}

/** The event as an OTLP map: the JSON line's fields, those left undefined left out (OTLP has no undefined). */
function bodyOf(event: DecisionEvent): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) if (value !== undefined) body[key] = value;
  return body;
}

/**
 * The decision log as OTLP log records (event name `flowgate.decision`), batched to an OTLP/HTTP logs
 * endpoint: the same events, masking and sampling as the JSON lines (the body is the JSON line's
 * object), with the decision and reason also as attributes for the collector to route on, and the
 * request's trace and span ids when the request was traced.
 */
export function startOtlpDecisionLog(otlp: { readonly endpoint: string; readonly serviceName: string }): OtlpDecisionLog {
  const provider = new LoggerProvider({
    resource: serviceResource(otlp.serviceName),
    processors: [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter({ url: otlp.endpoint, timeoutMillis: 10_000 }) })],
  });
  const logger = provider.getLogger('flowgate.decision-log', VERSION);
  return {
    write(event, scope) {
      const attributes: Record<string, string> = { 'flowgate.decision': event.decision };
      if (event.reason !== undefined) attributes['flowgate.reason'] = event.reason;
      logger.emit({
        eventName: 'flowgate.decision',
        severityNumber: event.decision === 'allow' ? SeverityNumber.INFO : SeverityNumber.WARN,
        severityText: event.decision === 'allow' ? 'INFO' : 'WARN',
        body: bodyOf(event),
        attributes,
        ...(scope.trace ? { context: scope.trace.context } : {}),
      });
    },
    shutdown: () => shutdownWithin(() => provider.shutdown()),
  };
}
