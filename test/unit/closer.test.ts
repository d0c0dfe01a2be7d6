import { describe, expect, it } from 'vitest';
import { createCloser } from '../../src/start/closer.js';

describe('closer', () => {
  it('undoes what was opened last first, each step once the one before settled', async () => {
    const closer = createCloser();
    const done: string[] = [];
    closer.defer(() => void done.push('store'));
    closer.defer(async () => {
      await new Promise((r) => setTimeout(r, 10));
      done.push('pool');
    });
    closer.defer(() => void done.push('listener'));
    await closer.close();
    expect(done).toEqual(['listener', 'pool', 'store']);
  });

  it('runs every step when one fails, then rejects with its error', async () => {
    const closer = createCloser();
    const done: string[] = [];
    const boom = new Error('pool would not close');
    closer.defer(() => void done.push('store'));
    closer.defer(() => Promise.reject(boom));
    closer.defer(() => void done.push('listener'));
    await expect(closer.close()).rejects.toBe(boom);
    expect(done).toEqual(['listener', 'store']);
  });

  it('rejects with every error when several steps fail', async () => {
    const closer = createCloser();
    closer.defer(() => {
      throw new Error('a');
    });
    closer.defer(() => Promise.reject(new Error('b')));
    const err = await closer.close().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AggregateError);
    expect((err as AggregateError).errors.map((e: Error) => e.message)).toEqual(['b', 'a']);
  });

  it('unwinds once: a second close answers the same promise and runs nothing again', async () => {
    const closer = createCloser();
    let runs = 0;
    closer.defer(() => void runs++);
    const first = closer.close();
    expect(closer.close()).toBe(first);
    await first;
    await closer.close();
    expect(runs).toBe(1);
  });

  it('refuses a module opened once closing began', async () => {
    const closer = createCloser();
    await closer.close();
    expect(() => closer.defer(() => undefined)).toThrow(/after closing began/);
  });
});
