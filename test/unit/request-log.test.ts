import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging.js';
import { createRequestLog } from '../../src/proxy/request-log.js';
import type { RequestScope } from '../../src/proxy/request-scope.js';

function capture(level: string) {
  const lines: string[] = [];
  const logger = createLogger(level, { write: (chunk: string) => void lines.push(chunk) });
  return { logger, lines, parsed: () => lines.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const finished = { headersSent: true, statusCode: 201, writableFinished: true } as unknown as ServerResponse;
const req = { method: 'POST' } as IncomingMessage;
const scope = (over: Partial<RequestScope> = {}): RequestScope =>
  ({
    requestId: 'req-1',
    started: process.hrtime.bigint() - 2_500_000n,
    route: '/api/2.0/mlflow/runs/create',
    decision: 'allow',
    reason: 'direct-grant',
    resourceType: 'experiment',
    principal: { username: 'alice' },
    decisionSeconds: 0.0000123,
    upstreamSeconds: 0.0015,
    upstreamStatus: 201,
    ...over,
  }) as RequestScope;

describe('the request line', () => {
  it('is written in the logger’s own format: the same keys, in the same order, as pino writes for these fields', () => {
    const mine = capture('info');
    createRequestLog(mine.logger)(scope(), req, finished);
    const [line] = mine.parsed();

    const pinos = capture('info');
    pinos.logger.info({ requestId: 'req-1', method: 'POST', route: '/api/2.0/mlflow/runs/create', user: 'alice', decision: 'allow', reason: 'direct-grant', resourceType: 'experiment', status: 201, durationMs: 1, decisionMs: 1, upstreamMs: 1, upstreamStatus: 201 }, 'request');
    const [reference] = pinos.parsed();

    expect(Object.keys(line!)).toEqual(Object.keys(reference!));
    expect(line).toMatchObject({ level: 'info', service: 'flowgate', msg: 'request', requestId: 'req-1', user: 'alice', status: 201, upstreamMs: 1.5, decisionMs: 0.012, upstreamStatus: 201 });
    expect(line!.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(line!.durationMs).toBeGreaterThanOrEqual(2.5);
  });

  it('leaves out what a request did not have, and marks one whose client went away', () => {
    const { logger, parsed } = capture('info');
    const gone = { headersSent: false, statusCode: 200, writableFinished: false } as unknown as ServerResponse;
    createRequestLog(logger)(scope({ principal: undefined, decisionSeconds: undefined, upstreamSeconds: undefined }), req, gone);
    const [line] = parsed();
    expect(line).toMatchObject({ status: 499, aborted: true });
    for (const absent of ['user', 'decisionMs', 'upstreamMs', 'upstreamStatus']) expect(line).not.toHaveProperty(absent);
  });

  it('is not written when the logger’s level is above info', () => {
    const { logger, lines } = capture('warn');
    createRequestLog(logger)(scope(), req, finished);
    expect(lines).toEqual([]);
  });

  it('escapes what it writes as JSON: a user name with quotes and a newline stays one line', () => {
    const { logger, lines, parsed } = capture('info');
    createRequestLog(logger)(scope({ principal: { username: 'eve"\n{"x":1' } as RequestScope['principal'] }), req, finished);
    expect(lines.join('').trim().split('\n')).toHaveLength(1);
    expect(parsed()[0]!.user).toBe('eve"\n{"x":1');
  });
});
