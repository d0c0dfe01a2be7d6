import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { FlowgateError } from '../../src/errors.js';
import { createPrincipalCache } from '../../src/principals/principal-cache.js';
import type { Directory } from '../../src/principals/directory.js';
import type { Principal } from '../../src/principals/types.js';
import type { CredentialLoader } from '../../src/http/credentials.js';
import { basicTokenLoader, createAuthenticator } from '../../src/proxy/authenticate.js';
import { hashToken, mintToken } from '../../src/tokens/token.js';
import type { TokenRepo } from '../../src/tokens/token-repo.js';
import { createTokenVerifier } from '../../src/tokens/verifier.js';

const request = (authorization?: string) => ({ headers: authorization === undefined ? {} : { authorization } }) as IncomingMessage;
const alice: Principal = { userId: 1, username: 'alice', isAdmin: false, isServiceAccount: false, groupIds: [], via: 'basic' };

describe('createAuthenticator', () => {
  it('answers synchronously while the loaders do, in their order', () => {
    const calls: string[] = [];
    const none: CredentialLoader = () => (calls.push('none'), undefined);
    const found: CredentialLoader = () => (calls.push('found'), alice);
    const outcome = createAuthenticator([none, found])(request());
    expect(outcome).not.toBeInstanceOf(Promise);
    expect(outcome).toEqual({ principal: alice, method: 'basic' });
    expect(calls).toEqual(['none', 'found']);
    expect(createAuthenticator([none])(request())).toEqual({ principal: undefined, method: 'none' });
  });

  it('continues after a loader that answers later, and a thrown 401 stops the chain', async () => {
    const later: CredentialLoader = async () => undefined;
    const found: CredentialLoader = () => alice;
    const pending = createAuthenticator([later, found])(request());
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual({ principal: alice, method: 'basic' });
    const refusing: CredentialLoader = () => {
      throw new FlowgateError('UNAUTHENTICATED', 'no');
    };
    expect(() => createAuthenticator([refusing, found])(request())).toThrow(FlowgateError);
  });
});

describe('basicTokenLoader', () => {
  const token = mintToken();
  const records = new Map([[hashToken(token), { id: 7, userId: 1, createdAt: 0, expiresAt: Date.now() + 60_000, revokedAt: null }]]);
  const repo = { findByHash: (h: string) => records.get(h) } as unknown as TokenRepo;
  const directory = {
    userById: (id: number) => (id === 1 ? { id: 1, username: 'alice', displayName: 'Alice', isAdmin: false, isServiceAccount: false, createdAt: 0 } : undefined),
    groupIdsOfUser: () => [3],
  } as unknown as Directory;
  const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

  it('proves the user, with one principal object per cached identity (no object per request, no promise on a hit)', async () => {
    const principals = createPrincipalCache(directory, 10);
    const load = basicTokenLoader(createTokenVerifier({ repo, usernameOf: () => 'alice', cacheSize: 10 }), principals);
    const first = await load(request(basic(`alice:${token}`)));
    expect(first).toEqual({ userId: 1, username: 'alice', isAdmin: false, isServiceAccount: false, groupIds: [3], via: 'basic' });
    expect(load(request(`basic ${Buffer.from(`alice:${token}`).toString('base64')}`))).toBe(first);
    principals.invalidate();
    const after = await load(request(basic(`alice:${token}`)));
    expect(after).toEqual(first);
    expect(after).not.toBe(first);
  });

  it('leaves other schemes to other loaders and refuses bad Basic credentials with a 401', async () => {
    const load = basicTokenLoader(createTokenVerifier({ repo, usernameOf: () => 'alice', cacheSize: 10 }), createPrincipalCache(directory, 10));
    expect(load(request())).toBeUndefined();
    expect(load(request('Bearer abc'))).toBeUndefined();
    const status = async (header: string) => {
      try {
        await load(request(header));
      } catch (e) {
        return [(e as FlowgateError).status, (e as FlowgateError).message];
      }
      return 'accepted';
    };
    expect(await status(basic('no-colon-here'))).toEqual([401, 'Malformed Basic credentials']);
    expect((await status(basic(`bob:${token}`)))[0]).toBe(401);
    expect((await status(basic(`alice:${token.slice(0, -1)}`)))[0]).toBe(401);
    expect(await status(basic(`alice:${token}`))).toBe('accepted');
  });
});
