/** Undoes one module that was opened: closes a store or a pool, stops a feed, a timer or a listener. */
export type CloseStep = () => void | Promise<void>;

/**
 * The one clean-up path of a start: every module registers its close as soon as it is open, and a
 * failed start and an orderly stop both unwind the same stack, last opened first, so nothing is left
 * open and nothing is closed while a module opened after it may still use it. (Node 20 has no
 * `AsyncDisposableStack`.)
 */
export interface Closer {
  /** Registers how to undo what was just opened: it runs before everything registered earlier. */
  defer(step: CloseStep): void;
  /**
   * Runs every step, last registered first, each once the one before settled. A step that fails does
   * not stop the rest; the promise then rejects with its error (an AggregateError when several
   * failed). Unwinds once: later calls answer the same promise.
   */
  close(): Promise<void>;
}

export function createCloser(): Closer {
  const steps: CloseStep[] = [];
  let closing: Promise<void> | undefined;

  async function unwind(): Promise<void> {
    const errors: unknown[] = [];
    for (let step = steps.pop(); step !== undefined; step = steps.pop()) {
      try {
        await step();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, `${errors.length} modules failed to close`);
  }

  return {
    defer(step) {
      // A module opened once the stack unwound would be left open: a bug in the start sequence.
      if (closing) throw new Error('a module was opened after closing began');
      steps.push(step);
    },
    close: () => (closing ??= unwind()),
  };
}
