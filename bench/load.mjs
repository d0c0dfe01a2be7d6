// The load generator, run in its own process (child_process.fork) so it never shares an event loop
// with the server under test. Keep-alive node:http Agent; either N closed loops (saturation) or a
// fixed arrival rate (latency), bounded in count and time. Latency at a fixed rate is measured from
// each request's intended send time, so a stalled server cannot hide its queueing delay; a fixed-rate
// run warms up at that same rate.
import { Agent, request } from 'node:http';

function once(agent, base, r) {
  return new Promise((resolve) => {
    const url = new URL(r.path, base);
    const req = request(
      url,
      { method: r.method, agent, headers: r.body ? { ...r.headers, 'Content-Length': Buffer.byteLength(r.body) } : r.headers },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(r.body);
  });
}

function summarize(latencies, n, statuses, seconds) {
  const sorted = Float64Array.from(latencies.subarray(0, n)).sort();
  const pct = (p) => (n ? sorted[Math.min(n - 1, Math.floor((p / 100) * n))] : NaN);
  const ok = Object.entries(statuses).reduce((a, [s, c]) => a + (s >= 200 && s < 400 ? c : 0), 0);
  return { count: n, ok, statuses, seconds, rps: n / seconds, p50: pct(50), p90: pct(90), p99: pct(99), max: n ? sorted[n - 1] : NaN };
}

/** { base, mix:[{method,path,headers,body}], concurrency, durationMs, maxRequests, rate?, warmupMs? } */
async function run(o) {
  const agent = new Agent({ keepAlive: true, maxSockets: o.concurrency, maxFreeSockets: o.concurrency });
  const max = o.maxRequests;
  const latencies = new Float64Array(max);
  const statuses = {};
  let n = 0;
  let next = 0;
  const pick = () => o.mix[next++ % o.mix.length];

  /** Open loop: sends at `rate` for `ms` (or `limit` requests), each latency measured from its intended send time. */
  async function atRate(ms, limit, onDone) {
    const start = process.hrtime.bigint();
    const until = Date.now() + ms;
    const intervalNs = 1e9 / o.rate;
    let sent = 0;
    const pending = new Set();
    await new Promise((resolve) => {
      const tick = () => {
        const elapsed = Number(process.hrtime.bigint() - start);
        const due = Math.min(limit, Math.floor(elapsed / intervalNs) + 1);
        while (sent < due) {
          const intended = start + BigInt(Math.round(sent * intervalNs));
          sent++;
          const p = once(agent, o.base, pick()).then((s) => {
            onDone(s, intended);
            pending.delete(p);
          });
          pending.add(p);
        }
        if (sent >= limit || Date.now() >= until) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
    await Promise.all(pending);
    return sent;
  }

  // A fixed-rate run warms up at its own rate: warming up in closed loops would measure the server's
  // way back from saturation (a backlog, and scavenges slowed by everything in flight) as its latency.
  let warmup = 0;
  if (o.warmupMs && o.rate) warmup = await atRate(o.warmupMs, Number.MAX_SAFE_INTEGER, () => undefined);
  else if (o.warmupMs) {
    const until = Date.now() + o.warmupMs;
    await Promise.all(Array.from({ length: o.concurrency }, async () => {
      while (Date.now() < until) {
        await once(agent, o.base, pick());
        warmup++;
      }
    }));
  }
  if (o.onWarm) process.send({ warm: true });
  if (o.onWarm) await new Promise((r) => process.once('message', r));

  const t0 = process.hrtime.bigint();
  const deadline = Date.now() + o.durationMs;
  const record = (status, startedNs) => {
    if (n < max) latencies[n++] = Number(process.hrtime.bigint() - startedNs) / 1e6;
    statuses[status] = (statuses[status] ?? 0) + 1;
  };

  if (!o.rate) {
    await Promise.all(Array.from({ length: o.concurrency }, async () => {
      while (n < max && Date.now() < deadline) {
        const started = process.hrtime.bigint();
        record(await once(agent, o.base, pick()), started);
      }
    }));
  } else await atRate(o.durationMs, max, record);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  agent.destroy();
  return { ...summarize(latencies, n, statuses, seconds), warmup };
}

process.on('message', async (o) => {
  if (typeof o !== 'object' || o === null) return; // 'go' after the warm-up is awaited inside run()
  try {
    process.send({ result: await run(o) });
  } catch (e) {
    process.send({ error: String(e?.stack ?? e) });
  }
});
