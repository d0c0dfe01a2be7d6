import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { fromThisHost } from '../../src/http/same-origin.js';

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('fromThisHost', () => {
  it('takes an Origin or Referer naming the host the request was sent to', () => {
    expect(fromThisHost(req({ host: 'mlflow.example', origin: 'https://mlflow.example' }))).toBe(true);
    expect(fromThisHost(req({ host: 'mlflow.example', referer: 'https://mlflow.example/x' }))).toBe(true);
    expect(fromThisHost(req({ host: 'mlflow.example', origin: 'https://mlflow.example', 'sec-fetch-site': 'same-origin' }))).toBe(true);
  });

  it('refuses another host, no claim, and `null`', () => {
    expect(fromThisHost(req({ host: 'mlflow.example', origin: 'https://evil.example' }))).toBe(false);
    expect(fromThisHost(req({ host: 'mlflow.example' }))).toBe(false);
    expect(fromThisHost(req({ host: 'mlflow.example', origin: 'null' }))).toBe(false);
  });

  it("refuses a page of the same host under another scheme, which only the browser's Sec-Fetch-Site tells", () => {
    // http://mlflow.example (injected on the wire) posting to https://mlflow.example: Origin names the same host.
    expect(fromThisHost(req({ host: 'mlflow.example', origin: 'http://mlflow.example', 'sec-fetch-site': 'same-site' }))).toBe(false);
    expect(fromThisHost(req({ host: 'mlflow.example', origin: 'http://mlflow.example', 'sec-fetch-site': 'cross-site' }))).toBe(false);
  });
});
