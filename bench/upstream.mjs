// A fixed-answer stand-in for MLflow: answers the bench's request mix (and flowgate's resolver
// look-ups) the way MLflow shapes them, with no work behind them, so the proxy's own cost shows.
import { createServer } from 'node:http';

const ARTIFACT = Buffer.alloc(1024, 'a');
const json = (res, status, body) => {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) });
  res.end(payload);
};
/** Run ids are `run<E>x<N>`: the experiment is part of the id, so any run the client names resolves. */
const experimentOfRun = (runId) => /^run(\d+)x/.exec(runId ?? '')?.[1];
const EXPERIMENTS = Array.from({ length: 10 }, (_, i) => ({
  experiment_id: String(i + 1),
  name: `bench-${i + 1}`,
  artifact_location: `mlflow-artifacts:/${i + 1}`,
  lifecycle_stage: 'active',
  creation_time: 1_700_000_000_000,
  last_update_time: 1_700_000_000_000,
  tags: [],
}));

let served = 0;
const byPath = {};
const server = createServer((req, res) => {
  served++;
  const key = `${req.method} ${(req.url ?? '').split('?')[0].replace(/run\d+x\d+/g, ':run').replace(/artifacts\/\d+\//, 'artifacts/:e/')}`;
  byPath[key] = (byPath[key] ?? 0) + 1;
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://x');
    const p = url.pathname;
    if (p === '/health') {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
      return res.end('OK');
    }
    if (p.endsWith('/mlflow/runs/get')) {
      const runId = url.searchParams.get('run_id') ?? url.searchParams.get('run_uuid');
      const experimentId = experimentOfRun(runId);
      if (!experimentId) return json(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no run' });
      return json(res, 200, {
        run: {
          info: { run_id: runId, run_uuid: runId, experiment_id: experimentId, status: 'RUNNING', lifecycle_stage: 'active', start_time: 1_700_000_000_000, artifact_uri: `mlflow-artifacts:/${experimentId}/${runId}/artifacts` },
          data: { metrics: [{ key: 'loss', value: 0.5, timestamp: 1_700_000_000_000, step: 1 }], params: [], tags: [] },
          inputs: {},
        },
      });
    }
    if (p.endsWith('/mlflow/runs/log-metric')) return json(res, 200, {});
    if (p.endsWith('/mlflow/experiments/search')) return json(res, 200, { experiments: EXPERIMENTS });
    if (p.endsWith('/mlflow/experiments/get')) {
      const e = EXPERIMENTS[Number(url.searchParams.get('experiment_id')) - 1];
      return e ? json(res, 200, { experiment: e }) : json(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no experiment' });
    }
    if (p.includes('/mlflow-artifacts/artifacts/')) {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': ARTIFACT.length });
      return res.end(ARTIFACT);
    }
    json(res, 404, { error_code: 'ENDPOINT_NOT_FOUND', message: 'not in the bench stub' });
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
process.on('message', (m) => {
  if (m === 'stats') process.send?.({ maxRss: process.resourceUsage().maxRSS * 1024, rss: process.memoryUsage().rss, cpu: process.cpuUsage(), served, byPath });
});
process.on('disconnect', () => process.exit(0));
