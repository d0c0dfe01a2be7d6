import * as oidc from 'openid-client';
import type { Claims } from './claims.js';

/** The identity provider as flowgate uses it: a narrow seam, so tests and callers see no library types. */
export interface IdentityProvider {
  /** Starts a login: the provider URL to send the browser to. Throws ProviderUnavailable. */
  authorizationUrl(p: { state: string; nonce: string; codeVerifier: string }): Promise<URL>;
  /**
   * Finishes a login from the callback URL: the ID token's claims merged with userinfo where needed,
   * and the ID token itself (sent back as `id_token_hint` at logout).
   */
  finishLogin(
    callbackUrl: URL,
    checks: { state: string; nonce: string; codeVerifier: string },
    needs: readonly string[],
  ): Promise<{ claims: Claims; idToken: string | undefined }>;
  /**
   * The provider's RP-initiated logout URL, when it offers one (undefined if it does not, or cannot
   * be reached to say). With the session's ID token as hint, providers such as Keycloak end the
   * session without asking the user to confirm.
   */
  endSessionUrl(postLogoutRedirect: string, idTokenHint?: string): Promise<URL | undefined>;
  /** Starts discovery in the background, so the first login does not wait for it. */
  warmUp?(): void;
}

export interface ProviderOptions {
  readonly issuerUrl: string;
  readonly clientId: string;
  readonly clientSecret: string | undefined;
  readonly redirectUrl: string;
  readonly scopes: string;
  /** After a failed discovery, how long logins fail fast before it is tried again. */
  readonly retryCooldownMs?: number;
  readonly timeoutSeconds?: number;
}

/** The provider could not be reached (discovery, token or userinfo call failed at the transport level). */
export class ProviderUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderUnavailable';
  }
}

/** The provider answered, but the login is not valid (state, nonce, code, signature, …). */
export class LoginRejected extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'LoginRejected';
  }
}

/** http issuers only on loopback (tests, local development); everything else must be https. */
export function isLoopbackHttp(url: string): boolean {
  const u = new URL(url);
  return u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
}

/**
 * openid-client v6 behind the seam. Discovery is lazy and single-flight: the first login (or the
 * warm-up at start) fetches the provider's metadata; after a failure, logins fail fast for
 * `retryCooldownMs`, then discovery is tried again. Sessions never need the provider.
 */
export function createIdentityProvider(o: ProviderOptions): IdentityProvider {
  const cooldown = o.retryCooldownMs ?? 5_000;
  let config: oidc.Configuration | undefined;
  let inflight: Promise<oidc.Configuration> | undefined;
  let failedAt = -Infinity;

  async function discover(): Promise<oidc.Configuration> {
    if (config) return config;
    if (inflight) return inflight;
    if (Date.now() - failedAt < cooldown) throw new ProviderUnavailable('identity provider discovery failed recently');
    const insecure = isLoopbackHttp(o.issuerUrl);
    inflight = oidc
      .discovery(
        new URL(o.issuerUrl),
        o.clientId,
        { redirect_uris: [o.redirectUrl], response_types: ['code'], ...(o.clientSecret ? { client_secret: o.clientSecret } : {}) },
        o.clientSecret ? oidc.ClientSecretBasic(o.clientSecret) : oidc.None(),
        { timeout: o.timeoutSeconds ?? 10, ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}) },
      )
      .then(
        (c) => {
          config = c;
          inflight = undefined;
          return c;
        },
        (e: unknown) => {
          failedAt = Date.now();
          inflight = undefined;
          throw new ProviderUnavailable(`identity provider discovery failed: ${describe(e)}`);
        },
      );
    return inflight;
  }

  return {
    warmUp() {
      discover().catch(() => undefined);
    },

    async authorizationUrl({ state, nonce, codeVerifier }) {
      const c = await discover();
      return oidc.buildAuthorizationUrl(c, {
        redirect_uri: o.redirectUrl,
        scope: o.scopes,
        response_type: 'code',
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      });
    },

    async finishLogin(callbackUrl, checks, needs) {
      const c = await discover();
      let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
      try {
        tokens = await oidc.authorizationCodeGrant(c, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
      } catch (e) {
        throw classify(e);
      }
      const idClaims = tokens.claims();
      if (!idClaims) throw new LoginRejected('the provider returned no ID token', 'missing_id_token');
      const claims: Record<string, unknown> = { ...idClaims };
      const missing = needs.some((path) => !(path.split('.')[0]! in claims));
      if (missing && c.serverMetadata().userinfo_endpoint) {
        try {
          const info = await oidc.fetchUserInfo(c, tokens.access_token, idClaims.sub);
          for (const [k, v] of Object.entries(info)) if (!(k in claims)) claims[k] = v;
        } catch (e) {
          throw classify(e);
        }
      }
      return { claims, idToken: tokens.id_token };
    },

    async endSessionUrl(postLogoutRedirect, idTokenHint) {
      // Discovered here too: a flowgate whose discovery at start failed, and on which nobody has signed
      // in since, would otherwise end no sign-out at the provider, whose session then signs the next
      // visitor of this browser straight back in.
      let c: oidc.Configuration;
      try {
        c = await discover();
      } catch {
        return undefined;
      }
      if (!c.serverMetadata().end_session_endpoint) return undefined;
      return oidc.buildEndSessionUrl(c, {
        client_id: o.clientId,
        post_logout_redirect_uri: postLogoutRedirect,
        ...(idTokenHint ? { id_token_hint: idTokenHint } : {}),
      });
    },
  };
}

/** Transport failures are the provider being down; anything the provider or a check refused is a rejection. */
function classify(e: unknown): Error {
  if (e instanceof oidc.ResponseBodyError || e instanceof oidc.AuthorizationResponseError)
    return new LoginRejected(`the provider refused the login (${e.error})`, e.error);
  if (e instanceof oidc.ClientError && (e.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || e.code === 'OAUTH_RESPONSE_IS_NOT_JSON'))
    return new ProviderUnavailable(`the identity provider answered with an error status (${e.code})`);
  if (e instanceof oidc.ClientError) return new LoginRejected(`the login response failed a check (${e.code ?? 'invalid'})`, e.code ?? 'invalid');
  return new ProviderUnavailable(`the identity provider could not be reached: ${describe(e)}`);
}

/** An error's name and code only: library messages can quote response bodies. */
function describe(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    const cause = (e.cause as { code?: unknown } | undefined)?.code;
    return [e.name, typeof code === 'string' ? code : undefined, typeof cause === 'string' ? cause : undefined].filter(Boolean).join(' ');
  }
  return 'unknown error';
}
