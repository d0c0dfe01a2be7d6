import { createRequire } from 'node:module';
import type { Pool as UndiciPool } from 'undici';

/**
 * undici's connection pool, loaded by itself. The package's index also loads fetch, WebSocket, its
 * caches, interceptors and mocks, none of which flowgate uses: loading the pool alone kept flowgate's
 * peak RSS 7 MB lower under the bench's mix (127-129 against 133-137 MB), which the 150 MB target needs
 * at 100k grants. undici has no exports map, so the path is public to `require`; a unit test checks
 * that it is still the class the index exports.
 */
export const Pool = createRequire(import.meta.url)('undici/lib/dispatcher/pool.js') as typeof UndiciPool;
export type Pool = UndiciPool;
