import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { ASSET_FILES } from './paths.js';

/** dist/web holds the built front end; this module sits two levels below the package root in src/ and dist/ alike. */
const WEB_DIR = fileURLToPath(new URL('../../dist/web/', import.meta.url));

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

/** The built assets, read once on first use; a missing build is reported, not crashed on. */
export function createAssets(dir = WEB_DIR) {
  let loaded: Map<string, Asset> | undefined;
  function load(): Map<string, Asset> {
    if (loaded) return loaded;
    const m = new Map<string, Asset>();
    for (const name of ASSET_FILES) {
      try {
        m.set(name, { body: readFileSync(dir + name), type: TYPES[name.split('.').pop()!]! });
      } catch {
        // Not built: answered 404 below, and the shell still works without the menu.
      }
    }
    return (loaded = m);
  }
  return {
    /** Answers one asset by file name; false when flowgate has no such file. */
    send(res: ServerResponse, name: string, head: boolean): boolean {
      const a = load().get(name);
      if (!a) return false;
      res.writeHead(200, {
        'Content-Type': a.type,
        'Content-Length': a.body.length,
        // Names are not hashed: revalidate, so an upgrade is picked up at once.
        'Cache-Control': 'no-cache',
        'X-Content-Type-Options': 'nosniff',
        'Cross-Origin-Resource-Policy': 'same-origin',
      });
      res.end(head ? undefined : a.body);
      return true;
    },
  };
}

export type Assets = ReturnType<typeof createAssets>;
