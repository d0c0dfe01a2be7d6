import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, REPO_ROOT } from '../helpers/flowgate-process.js';

const flags = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { flowgate: { nodeFlags: string[] } }).flowgate.nodeFlags;
const WARM = pathToFileURL(join(REPO_ROOT, 'dist/upstream/warm-http-parsers.js')).href;
/** Node 20's V8 takes ~30 MB for a moment to optimize llhttp after its first use; Node 24's does not. */
const OPTIMIZER_SPIKES = process.versions.node.startsWith('20.');

/**
 * How far a fresh Node's peak RSS (MB) rises over the first request of each HTTP client flowgate uses
 * (undici's and `fetch`), with flowgate's Node flags, after `warmHttpParsers` or without it.
 */
function peakRiseOnFirstUse(warm: boolean): number {
  const script = `
    import { createServer } from 'node:http';
    import { Client } from 'undici';
    const rest = () => new Promise((r) => setTimeout(r, 1500));
    ${warm ? `await (await import(${JSON.stringify(WARM)})).warmHttpParsers();` : ''}
    await rest();
    const before = process.resourceUsage().maxRSS;
    const server = createServer((_req, res) => res.end('ok')).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const origin = 'http://127.0.0.1:' + server.address().port;
    const client = new Client(origin);
    await (await client.request({ method: 'GET', path: '/' })).body.text();
    await (await fetch(origin)).text();
    await rest();
    console.log(process.resourceUsage().maxRSS - before);
    await client.close();
    server.closeAllConnections();
    server.close();`;
  const kb = Number(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 30_000 }));
  return kb / 1024;
}

describe('warming the HTTP parsers before the policy loads', () => {
  beforeAll(() => ensureBuilt(), 200_000);

  it.runIf(OPTIMIZER_SPIKES)('without it, the first requests raise the peak RSS by tens of MB (what the warm-up moves)', () => {
    expect(peakRiseOnFirstUse(false)).toBeGreaterThan(15);
  });

  it('after it, the first real requests leave the peak RSS where it was', () => {
    expect(peakRiseOnFirstUse(true)).toBeLessThan(6);
  });

  it('leaves no server, socket or client behind', async () => {
    const { warmHttpParsers } = (await import(WARM)) as { warmHttpParsers(): Promise<void> };
    const open = () => process.getActiveResourcesInfo().filter((r) => r.startsWith('TCP')).length;
    const before = open();
    await warmHttpParsers();
    // Sockets finish closing on the loop's next turns.
    await expect.poll(open, { timeout: 2000 }).toBe(before);
  });
});
