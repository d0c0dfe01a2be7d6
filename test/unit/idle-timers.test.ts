// An idle flowgate must have (almost) no timer waking it (docs/performance.md, "Idle CPU";
// bench/idle-cpu.mjs measures it): timers for work that exists only under traffic sleep when it is
// gone, and the SQLite store's three change logs are read on one timer.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchedDestination } from '../../src/log-batching.js';
import { createMetrics } from '../../src/metrics/registry.js';
import { eventLoopDelay } from '../../src/metrics/event-loop-delay.js';
import { sleepingInterval } from '../../src/sleeping-interval.js';
import { openDatabase } from '../../src/store/database.js';
import { followSqlite } from '../../src/store/sqlite-follow.js';
import { createSilenceWatch, type Listening } from '../../src/upstream/silence-watch.js';

afterEach(() => vi.useRealTimers());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Holds the event loop for `ms`, so a running delay sampler records a delay. */
const blockFor = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('sleepingInterval', () => {
  it('ticks while its work goes on, sleeps after a tick with nothing to do, and wakes again', () => {
    vi.useFakeTimers();
    let work = 2;
    let ticks = 0;
    const t = sleepingInterval(() => {
      ticks++;
      return --work > 0;
    }, 100);
    expect(vi.getTimerCount()).toBe(0);
    t.wake();
    t.wake(); // a second wake on a running timer starts no second one
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(ticks).toBe(2);
    expect(vi.getTimerCount()).toBe(0);
    work = 1;
    t.wake();
    vi.advanceTimersByTime(100);
    expect(ticks).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
    t.stop();
    t.wake();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('timers that sleep while flowgate is idle', () => {
  it('the silence watch has no timer while no call to MLflow is waiting, and still gives up on a silent one', () => {
    vi.useFakeTimers();
    const watch = createSilenceWatch(4000);
    expect(vi.getTimerCount()).toBe(0);
    let failure: Error | undefined;
    const call: Listening = { lastHeard: 0, watchPrev: undefined, watchNext: undefined, giveUp: (err) => (failure = err) };
    watch.watch(call);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(5000);
    expect(failure?.message).toMatch(/sent nothing for 4000 ms/);
    vi.advanceTimersByTime(1000); // the sweep that finds nothing left puts it to sleep
    expect(vi.getTimerCount()).toBe(0);
    const answered: Listening = { lastHeard: 0, watchPrev: undefined, watchNext: undefined, giveUp: () => expect.fail('an answered call was given up on') };
    watch.watch(answered);
    watch.done(answered);
    vi.advanceTimersByTime(2000);
    expect(vi.getTimerCount()).toBe(0);
    watch.close();
  });

  it('log batching has no timer once its lines are handed on, and shows a later line within the interval', () => {
    vi.useFakeTimers();
    const written: string[] = [];
    const out = batchedDestination({ write: (s: string) => written.push(s), flushSync: () => undefined } as never, 1000);
    out.write('{"msg":"one"}\n');
    vi.advanceTimersByTime(1000);
    expect(written).toEqual(['{"msg":"one"}\n']);
    vi.advanceTimersByTime(1000);
    expect(vi.getTimerCount()).toBe(0);
    out.write('{"msg":"two"}\n');
    vi.advanceTimersByTime(1000);
    expect(written).toEqual(['{"msg":"one"}\n', '{"msg":"two"}\n']);
  });

  it('the SQLite store is followed on one timer that still reads every log: grants, ended sessions, mappings', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fg-idle-')), 'p.db');
    const self = openDatabase(path);
    const other = openDatabase(path);
    try {
      vi.useFakeTimers();
      const seen: string[] = [];
      const following = followSqlite(self, 1000, {
        grants: (refs) => seen.push(`grants:${refs === 'all' ? 'all' : refs.map((r) => `${r.kind}/${r.id}`).join(',')}`),
        principals: () => seen.push('principals'),
        patterns: () => seen.push('patterns'),
        sessionsEnded: (ids) => seen.push(`sessions:${ids === 'all' ? 'all' : ids.join(',')}`),
        mappings: (changes) => seen.push(`mappings:${changes === 'all' ? 'all' : changes.map((c) => `${c.cache}/${c.key}`).join(',')}`),
      });
      expect(vi.getTimerCount()).toBe(1);
      const user = other.prepare("INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES ('bob', 'bob', 0, 0, 0)").run().lastInsertRowid;
      other.prepare("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('experiment', '7', ?, 'READ', 0, 0)").run(user);
      other.prepare("INSERT INTO session_ends (id_hash) VALUES ('h1')").run();
      other.prepare("INSERT INTO mapping_changes (cache, key) VALUES ('model', 'm1')").run();
      vi.advanceTimersByTime(1000);
      expect(seen).toEqual(expect.arrayContaining(['principals', 'grants:experiment/7', 'sessions:h1', 'mappings:model/m1']));
      void following.stop();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      self.close();
      other.close();
    }
  });

  it('the event-loop delay is sampled while requests come, and not at all once they stop', async () => {
    const registry = new Registry();
    const loop = eventLoopDelay([registry], 10, 100);
    const p99 = async () => {
      const text = await registry.metrics();
      return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text)?.[1]);
    };
    loop.requestStarted();
    for (let i = 0; i < 5; i++) {
      await sleep(15);
      blockFor(30);
    }
    loop.requestEnded();
    expect(await p99()).toBeGreaterThan(0.01);
    await sleep(350); // two idle ticks: sampling stops
    await p99(); // starts a fresh span
    for (let i = 0; i < 5; i++) {
      await sleep(15);
      blockFor(30);
    }
    expect(await p99()).toBe(0);
    loop.requestStarted();
    for (let i = 0; i < 5; i++) {
      await sleep(15);
      blockFor(30);
    }
    loop.requestEnded();
    expect(await p99()).toBeGreaterThan(0.01);
  });

  it("flowgate's metrics keep every nodejs_eventloop_lag series, filled by its own sampler", async () => {
    const metrics = createMetrics({ version: 'test' });
    metrics.inFlight.inc();
    await sleep(30);
    blockFor(40);
    await sleep(30);
    metrics.inFlight.dec();
    const text = await metrics.registry.metrics();
    for (const suffix of ['', '_min', '_max', '_mean', '_stddev', '_p50', '_p90', '_p99'])
      expect(text).toMatch(new RegExp(`^nodejs_eventloop_lag${suffix}_seconds \\S+$`, 'm'));
    expect(Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1])).toBeGreaterThan(0.02);
  });
});
