import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { cookiePolicy, readCookie } from '../../src/oidc/cookies.js';
import { csrfAllows, isStateChanging } from '../../src/oidc/csrf.js';

describe('cookiePolicy', () => {
  it.each([
    ['', true, '__Host-flowgate_session', '/'],
    ['', false, 'flowgate_session', '/'],
    ['/mlflow', true, '__Secure-flowgate_session', '/mlflow'],
    ['/mlflow', false, 'flowgate_session', '/mlflow'],
  ])('base %j secure %s', (basePath, secure, name, path) => {
    const p = cookiePolicy(basePath, secure);
    expect(p.session).toBe(name);
    expect(p.path).toBe(path);
  });
});

describe('readCookie', () => {
  const name = '__Secure-flowgate_session';
  const of = (cookie: string | undefined) => readCookie({ headers: cookie === undefined ? {} : { cookie } } as unknown as IncomingMessage, name);
  it.each([
    [undefined, undefined],
    ['theme=dark', undefined],
    [`${name}=abc`, 'abc'],
    [`theme=dark; ${name}=abc; other=1`, 'abc'],
    // Names that merely end or start like it are other cookies.
    [`x${name}=zzz; ${name}=abc; ${name}x=yyy`, 'abc'],
    [`flowgate_session=zzz; ${name}=abc`, 'abc'],
    // A second cookie of the name (tossed from a sibling host or for a longer path): neither is taken.
    [`${name}=attacker; theme=dark; ${name}=victim`, undefined],
    [`${name}=same;${name}=same`, undefined],
  ])('%j → %j', (cookie, value) => {
    expect(of(cookie)).toBe(value);
  });
});

const ORIGIN = 'https://mlflow.example.com';
const SECRET = 'csrf-secret-value';
const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('csrfAllows', () => {
  it.each([
    [{ origin: ORIGIN }, true],
    [{ origin: 'https://evil.example' }, false],
    [{ origin: 'https://mlflow.example.com.evil.example' }, false],
    [{ origin: 'http://mlflow.example.com' }, false],
    [{ origin: 'null' }, false],
    [{ origin: 'https://evil.example', 'x-flowgate-csrf': SECRET }, false],
    [{ referer: `${ORIGIN}/#/experiments` }, true],
    [{ referer: 'https://evil.example/' }, false],
    [{ referer: 'not a url' }, false],
    [{ 'x-flowgate-csrf': SECRET }, true],
    [{ 'x-flowgate-csrf': 'wrong' }, false],
    [{}, false],
  ])('%j → %s', (headers, allowed) => {
    expect(csrfAllows(req(headers), ORIGIN, SECRET)).toBe(allowed);
  });

  it.each([
    ['GET', false],
    ['HEAD', false],
    ['OPTIONS', false],
    ['POST', true],
    ['PUT', true],
    ['PATCH', true],
    ['DELETE', true],
    ['post', true],
  ])('%s changes state: %s', (method, expected) => {
    expect(isStateChanging(method)).toBe(expected);
  });
});
