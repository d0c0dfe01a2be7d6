import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JSONWebKeySet, type JWK, type JWTPayload } from 'jose';
// @ts-expect-error -- oidc-provider ships no type declarations; the small part used here is typed below.
import ProviderCtor from 'oidc-provider';
import { freePort } from './oidc-provider.js';

export interface IssuerKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function newKey(kid: string, alg = 'RS256'): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A JWT signed with `key` (its `kid` and `alg` in the header unless `header` says otherwise). */
export function signWith(key: IssuerKey, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header }).sign(key.privateKey);
}

/**
 * A token issuer of the test's own: RSA keys made with jose, a JWKS it serves (and, on request, OIDC
 * discovery), keys it can rotate, and every path it was asked for (to see what flowgate fetched).
 */
export interface LocalIssuer {
  readonly issuer: string;
  readonly jwksUrl: string;
  readonly requests: string[];
  keys: IssuerKey[];
  /** The JWKS the issuer publishes now. */
  jwks(): JSONWebKeySet;
  sign(claims: JWTPayload, o?: { key?: IssuerKey; header?: Record<string, unknown> }): Promise<string>;
  close(): Promise<void>;
}

export async function startLocalIssuer(o: { path?: string; discovery?: boolean; keys?: IssuerKey[] } = {}): Promise<LocalIssuer> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const issuer = `${origin}${o.path ?? ''}`;
  const requests: string[] = [];
  const self: LocalIssuer = {
    issuer,
    jwksUrl: `${issuer}/keys`,
    requests,
    keys: o.keys ?? [await newKey('key-1')],
    jwks: () => ({ keys: self.keys.map((k) => k.publicJwk) }),
    sign: (claims, s = {}) => signWith(s.key ?? self.keys[0]!, claims, s.header),
    close: () => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done()))),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', origin).pathname;
    requests.push(path);
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path === `${o.path ?? ''}/keys`) return json(self.jwks());
    if (o.discovery !== false && path === `${o.path ?? ''}/.well-known/openid-configuration`) return json({ issuer, jwks_uri: self.jwksUrl });
    res.writeHead(404).end();
  });
  await new Promise<void>((done) => server.listen(port, '127.0.0.1', () => done()));
  return self;
}

/** A Kubernetes service-account token's claims, as the API server's TokenRequest makes them. */
export function serviceAccountClaims(issuer: string, namespace: string, name: string, audience: string, lifetimeSeconds = 600): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: issuer,
    aud: [audience],
    sub: `system:serviceaccount:${namespace}:${name}`,
    iat: now,
    nbf: now,
    exp: now + lifetimeSeconds,
    'kubernetes.io': {
      namespace,
      serviceaccount: { name, uid: '6a0c55a7-0d14-4a55-9b8e-0e0ee6f0c2a1' },
      pod: { name: `${name}-0`, uid: '1f0e3c5e-4d4e-4f0e-8a7e-3f9b7a1f2c33' },
    },
  };
}

/** A kubeconfig whose user is a bearer token (what `kubectl create token` gives you), for `MLFLOW_TRACKING_AUTH=kubernetes`. */
export function kubeconfigWithToken(token: string, namespace: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server: 'https://127.0.0.1:6443', 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'sa', user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'sa', namespace } }],
    'current-context': 'test',
  });
}

interface ProviderInstance {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  on(event: string, listener: (...args: unknown[]) => void): void;
}
const Provider = ProviderCtor as new (issuer: string, config: Record<string, unknown>) => ProviderInstance;

export interface ClientCredentialsProvider {
  readonly issuer: string;
  /** An access token (a JWT for `audience`) from the client-credentials grant of this client. */
  token(clientId: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The npm `oidc-provider` as a machine-to-machine issuer: confidential clients that get JWT access
 * tokens for the resource `audience` by the client-credentials grant (the claims: `iss`, `sub` and
 * `client_id` = the client, `aud`, `exp`, `iat`, `jti`, `scope`).
 */
export async function startClientCredentialsProvider(o: { clients: string[]; audience: string }): Promise<ClientCredentialsProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const secret = (id: string) => `${id}-secret-0123456789abcdef0123456789`;
  const provider = new Provider(issuer, {
    clients: o.clients.map((id) => ({
      client_id: id,
      client_secret: secret(id),
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => o.audience,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: 'mlflow', audience: o.audience, accessTokenTTL: 600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
      },
    },
    scopes: ['mlflow'],
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
  });
  provider.on('server_error', () => undefined);
  const server = createServer(provider.callback());
  await new Promise<void>((done) => server.listen(port, '127.0.0.1', () => done()));
  return {
    issuer,
    async token(clientId) {
      const r = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret(clientId)}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'mlflow', resource: o.audience }),
      });
      if (!r.ok) throw new Error(`client credentials for ${clientId}: ${r.status} ${await r.text()}`);
      return ((await r.json()) as { access_token: string }).access_token;
    },
    close: () => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done()))),
  };
}
