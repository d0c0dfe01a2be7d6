import { beforeAll, describe, expect, it } from 'vitest';
import { mlflowVenv, runPython } from '../helpers/mlflow-server.js';
import { parseWerkzeugHash, werkzeugPasswordMatches } from '../../src/tokens/werkzeug-hash.js';

/** Hashes made by the werkzeug MLflow's basic-auth uses (its `generate_password_hash`), one per method it writes. */
let hashes: Record<string, string>;

beforeAll(async () => {
  const venv = await mlflowVenv();
  const r = await runPython(
    venv,
    [
      'import json',
      'from werkzeug.security import generate_password_hash as g',
      'print(json.dumps({',
      '  "scrypt": g("s3cret-Ünïcode"),',
      '  "pbkdf2": g("s3cret-Ünïcode", method="pbkdf2:sha256:600000"),',
      '  "pbkdf2_512": g("s3cret-Ünïcode", method="pbkdf2:sha512:1000"),',
      '  "scrypt_small": g("other", method="scrypt:16384:8:1"),',
      '  "pbkdf2_default": g("s3cret-Ünïcode", method="pbkdf2"),',
      '}))',
    ].join('\n'),
  );
  expect(r.code, r.stderr).toBe(0);
  hashes = JSON.parse(r.stdout) as Record<string, string>;
}, 900_000);

describe('werkzeug password hashes', () => {
  it.each(['scrypt', 'pbkdf2', 'pbkdf2_512', 'pbkdf2_default'])('checks a %s hash as werkzeug does', async (name) => {
    const hash = parseWerkzeugHash(hashes[name]!);
    expect(hash, hashes[name]!.split('$')[0]).toBeDefined();
    expect(await werkzeugPasswordMatches(hash!, 's3cret-Ünïcode')).toBe(true);
    expect(await werkzeugPasswordMatches(hash!, 's3cret-Unicode')).toBe(false);
    expect(await werkzeugPasswordMatches(hash!, '')).toBe(false);
  });

  it('reads the parameters from the hash, not defaults', async () => {
    const hash = parseWerkzeugHash(hashes.scrypt_small!)!;
    expect(hash).toMatchObject({ method: 'scrypt', n: 16384, r: 8, p: 1 });
    expect(await werkzeugPasswordMatches(hash, 'other')).toBe(true);
    expect(parseWerkzeugHash(hashes.pbkdf2!)).toMatchObject({ method: 'pbkdf2', hash: 'sha256', iterations: 600000 });
  });

  it('refuses what it cannot check exactly, rather than guessing', () => {
    const [, salt, hex] = hashes.pbkdf2!.split('$');
    for (const bad of [
      'plain$salt$abcd', // werkzeug's removed plain method
      `md5$${salt}$${hex}`,
      `pbkdf2:md5:1000$${salt}$${hex}`,
      `pbkdf2:sha256:0$${salt}$${hex}`,
      `pbkdf2:sha256:99999999999$${salt}$${hex}`,
      `scrypt:1048577:8:1$${salt}$${hex}`, // not a power of two
      `scrypt:1048576:64:16$${salt}$${hex}`, // gigabytes of memory
      `pbkdf2:sha256:600000$${salt}$${hex!.slice(2)}`, // digest of the wrong length
      `pbkdf2:sha256:600000$${salt}$XYZ`,
      `pbkdf2:sha256:600000$$${hex}`,
      'argon2$…',
      '',
    ])
      expect(parseWerkzeugHash(bad), bad).toBeUndefined();
  });
});
