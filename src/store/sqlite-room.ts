import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Below this much free space a write that needs a new page (a user, a grant, the WAL growing) can
 * fail with SQLITE_FULL while readiness's own small write still fits in pages the file already has.
 */
export const MIN_FREE_BYTES = 1024 * 1024;

/**
 * Whether the filesystem holding the embedded store has room for writes (the space an unprivileged
 * process may use). A filesystem that cannot say is given the benefit of the doubt: the write probe
 * still runs.
 */
export async function hasRoomToWrite(dbPath: string, minFreeBytes = MIN_FREE_BYTES): Promise<boolean> {
  if (dbPath === ':memory:' || dbPath === '') return true;
  try {
    const s = await statfs(dirname(dbPath));
    return s.bavail * s.bsize >= minFreeBytes;
  } catch {
    return true;
  }
}
