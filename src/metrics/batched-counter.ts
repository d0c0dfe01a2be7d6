import { Counter, type CounterConfiguration, type LabelValues } from 'prom-client';

export interface BatchedCounter<T extends string> {
  readonly counter: Counter<T>;
  /** One labelled series; calling the returned function adds 1 to it. */
  series(labels: LabelValues<T>): () => void;
}

/**
 * A prom-client Counter whose series are bumped on the request path as plain numbers and handed to
 * prom-client whenever the counter is read (a scrape, `get()`). prom-client's own `inc` validates
 * and hashes the labels on every call (about 1 µs), and a request increments several counters.
 */
export function batchedCounter<T extends string>(config: Omit<CounterConfiguration<T>, 'collect'>): BatchedCounter<T> {
  const all: Array<{ labels: LabelValues<T>; pending: number }> = [];
  const counter: Counter<T> = new Counter<T>({
    ...config,
    collect() {
      for (const s of all)
        if (s.pending > 0) {
          counter.inc(s.labels, s.pending);
          s.pending = 0;
        }
    },
  });
  const byLabels = new Map<string, () => void>();
  return {
    counter,
    series(labels) {
      // Asked again for the same labels (a caller that does not keep the function, one per event), the
      // same series comes back: a new entry each time grew memory and the scrape with every event.
      const key = Object.keys(labels)
        .sort()
        .map((name) => `${name}\u0000${String(labels[name as T])}`)
        .join('\u0001');
      const known = byLabels.get(key);
      if (known) return known;
      const s = { labels, pending: 0 };
      all.push(s);
      const inc = () => {
        s.pending++;
      };
      byLabels.set(key, inc);
      return inc;
    },
  };
}
