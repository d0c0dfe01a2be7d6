import { useState } from 'preact/hooks';

/**
 * One piece of work a button starts: `busy` while it runs (the button waits), its error kept to show.
 * `run` answers whether it succeeded.
 */
export function useRun() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (work: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      await work();
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(undefined) };
}
