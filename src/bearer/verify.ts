import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { EMAIL_CLAIM, emailVerified, readClaimPath, rolesFrom, stringClaim } from '../oidc/claims.js';
import type { BearerConfig, BearerIssuerConfig, KubernetesBearerIssuer, OidcBearerIssuer } from './config.js';
import { createKeySource, KeysUnavailable, type KeySource } from './keys.js';
import { storableDisplayName } from '../principals/display-name.js';

/** Who a verified token says is calling: the account (issuer + subject) and what flowgate makes of it. */
export interface BearerIdentity {
  readonly issuer: string;
  readonly subject: string;
  /** The name the token carries, as it is: it names a user only where `nameRefused` is unset. */
  readonly username: string | undefined;
  /**
   * Why `username` may not create or link a user (none, not a flowgate name, an unverified address, a
   * name only a kubernetes issuer makes): a fixed phrase safe to show. Only an account linked to no one
   * is refused for it: a linked account is its user whatever name its tokens carry now.
   */
  readonly nameRefused?: { readonly why: string; readonly holder?: 'kubernetes_name' } | undefined;
  readonly displayName: string;
  /** The groups the principal's memberships become; undefined: memberships are left alone. */
  readonly groups: readonly string[] | undefined;
  readonly serviceAccount: boolean;
  /** When the token expires (ms since the epoch): the verified token is cached no longer. */
  readonly expiresAt: number;
}

/**
 * A token of `issuer` is admitted only when the list at `claim` holds one of `anyOf`: the sign-in's
 * FLOWGATE_OIDC_ALLOWED_ROLES (with the admin role) for tokens of the sign-in issuer, an issuer's own
 * `required_groups`.
 */
export interface AdmissionRule {
  readonly issuer: string;
  readonly rule: 'allowed_roles' | 'required_groups';
  readonly claim: string;
  readonly anyOf: readonly string[];
}

/** A verified token of an account this server does not admit (403): who, for the log only. */
export class NotAdmitted extends Error {
  constructor(
    readonly rule: AdmissionRule['rule'],
    readonly issuer: string,
    readonly username: string | undefined,
  ) {
    super('the token holds none of the roles or groups this server admits');
    this.name = 'NotAdmitted';
  }
}

/** Why a token was refused: a fixed phrase safe to show (never anything read from the token). */
export class InvalidToken extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'InvalidToken';
  }
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Printable ASCII, no spaces: base64 (`+/=`), URL-like and path-like ids are fine to compare, never used to find a key. */
const KID = /^[\x21-\x7e]{1,256}$/;
/** Header parameters that point at keys elsewhere or carry one: flowgate takes keys only from the issuer's JWKS. */
const KEY_POINTERS = ['jku', 'x5u', 'jwk', 'x5c'] as const;
const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/;
const K8S_SUBJECT = /^system:serviceaccount:([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?):([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/;

function reasonOf(e: unknown): string {
  if (e instanceof errors.JWTExpired) return 'the token has expired';
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === 'nbf' || e.claim === 'iat') return 'the token is not valid yet';
    if (e.claim === 'aud') return 'the token is not meant for this server (audience)';
    return `the token's ${e.claim} claim is missing or wrong`;
  }
  if (e instanceof errors.JOSEAlgNotAllowed) return "the token's signing algorithm is not accepted";
  if (e instanceof errors.JWKSNoMatchingKey) return "the token's signing key is not the issuer's";
  if (e instanceof errors.JWKSMultipleMatchingKeys) return "the token names no key id and the issuer has several keys";
  if (e instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify";
  if (e instanceof errors.JOSENotSupported) return "the token's algorithm or key type is not supported";
  return 'the token is malformed';
}

/**
 * An OpenID Connect ID token is a sign-in's proof for the client it names, not a credential for an
 * API: flowgate keeps its own sign-in's in the session and hands it to the provider as the logout
 * URL's `id_token_hint`, and with the bearer issuer's audience equal to the sign-in client's id it
 * would otherwise verify as a bearer token. A `nonce` marks one (an authorization-code sign-in sends
 * one, and OIDC puts it only in the ID token: access tokens, client-credentials tokens and Kubernetes
 * tokens carry none; Keycloak before 25 also copied it into access tokens), and so does Keycloak's
 * `typ: "ID"` (its ID tokens, a refreshed one without a nonce too; its access tokens say `Bearer`).
 */
const isIdToken = (payload: JWTPayload): boolean => payload.nonce !== undefined || payload.typ === 'ID';

export interface BearerVerifier {
  /** The identity a token proves, or an InvalidToken / KeysUnavailable thrown. */
  verify(token: string): Promise<BearerIdentity>;
}

export function createBearerVerifier(
  config: BearerConfig,
  onKeyRefreshFailed: (issuer: string, err: Error) => void,
  now: () => number = Date.now,
  admission: readonly AdmissionRule[] = [],
): BearerVerifier {
  const issuers = new Map<string, { config: BearerIssuerConfig; keys: KeySource; rules: AdmissionRule[] }>();
  for (const issuer of config.issuers)
    issuers.set(issuer.issuer, {
      config: issuer,
      keys: createKeySource(issuer, (err) => onKeyRefreshFailed(issuer.issuer, err), now),
      rules: admission.filter((r) => r.issuer === issuer.issuer),
    });

  return {
    async verify(token) {
      if (token.length > config.maxTokenBytes) throw new InvalidToken('the token is too large');
      if (!COMPACT_JWS.test(token)) throw new InvalidToken('the token is not a signed JWT');
      let iss: unknown;
      try {
        const header = decodeProtectedHeader(token);
        if (header.kid !== undefined && (typeof header.kid !== 'string' || !KID.test(header.kid))) throw new InvalidToken("the token's key id is not acceptable");
        if (KEY_POINTERS.some((p) => p in header)) throw new InvalidToken('the token points at keys of its own');
        iss = decodeJwt(token).iss;
      } catch (e) {
        throw e instanceof InvalidToken ? e : new InvalidToken('the token is malformed');
      }
      // The issuer decides which keys and rules apply; the signature is then checked with that issuer's keys only.
      const entry = typeof iss === 'string' ? issuers.get(iss) : undefined;
      if (!entry) throw new InvalidToken('the token is not from an accepted issuer');
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, entry.keys, {
          issuer: entry.config.issuer,
          audience: entry.config.audience,
          algorithms: entry.config.algorithms,
          clockTolerance: config.clockSkewSeconds,
          requiredClaims: ['iss', 'sub', 'aud', 'exp'],
          currentDate: new Date(now()),
        }));
      } catch (e) {
        if (e instanceof KeysUnavailable) throw e;
        throw new InvalidToken(reasonOf(e));
      }
      if (typeof payload.iat === 'number' && payload.iat * 1000 > now() + config.clockSkewSeconds * 1000) throw new InvalidToken('the token is not valid yet');
      if (isIdToken(payload)) throw new InvalidToken("the token is an ID token (a sign-in's proof for its client), not an access token");
      if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 512) throw new InvalidToken("the token's sub claim is missing or wrong");
      const expiresAt = payload.exp! * 1000;
      const identity =
        entry.config.kind === 'kubernetes' ? kubernetesIdentity(entry.config, payload, expiresAt) : oidcIdentity(entry.config, payload, expiresAt);
      // Before anything is written: an account this server does not admit creates nothing.
      for (const rule of entry.rules) {
        const held = rolesFrom(readClaimPath(payload, rule.claim));
        if (!held.some((r) => rule.anyOf.includes(r))) throw new NotAdmitted(rule.rule, identity.issuer, identity.username);
      }
      return identity;
    },
  };
}

function oidcIdentity(c: OidcBearerIssuer, payload: JWTPayload, expiresAt: number): BearerIdentity {
  let username: string | undefined;
  let from: string | undefined;
  for (const claim of c.username_claim) if ((username = stringClaim(payload, (from = claim)))) break;
  let why: string | undefined;
  if (!username) why = 'the token has no user name claim';
  else if (!USERNAME.test(username)) why = "the token's user name is not a flowgate user name";
  // As at sign-in: an address its provider has not verified could be anyone's.
  else if (from === EMAIL_CLAIM && !c.insecure_allow_unverified_email && !emailVerified(payload)) why = "the token's user name is an email address its issuer has not verified";
  return {
    issuer: c.issuer,
    subject: payload.sub!,
    username,
    nameRefused: why === undefined ? undefined : { why },
    displayName: storableDisplayName(stringClaim(payload, 'name'), username ?? payload.sub!),
    groups: c.groups_claim === null ? undefined : rolesFrom(readClaimPath(payload, c.groups_claim)),
    serviceAccount: c.service_accounts,
    expiresAt,
  };
}

/**
 * A Kubernetes service-account token (projected, with `exp`): `sub` is
 * `system:serviceaccount:<namespace>:<name>`, and the `kubernetes.io` claim must say the same.
 */
function kubernetesIdentity(c: KubernetesBearerIssuer, payload: JWTPayload, expiresAt: number): BearerIdentity {
  const m = K8S_SUBJECT.exec(payload.sub!);
  if (!m) throw new InvalidToken('the token is not a Kubernetes service account');
  const namespace = m[1]!;
  const name = m[3]!;
  const k8s = payload['kubernetes.io'];
  if (readClaimPath(k8s, 'namespace') !== namespace || readClaimPath(k8s, 'serviceaccount.name') !== name)
    throw new InvalidToken("the token's kubernetes.io claim does not match its subject");
  const username = c.username_template.replaceAll('{namespace}', namespace).replaceAll('{name}', name);
  return {
    issuer: c.issuer,
    subject: payload.sub!,
    username,
    nameRefused: USERNAME.test(username) ? undefined : { why: "the service account's user name is not a flowgate user name" },
    displayName: payload.sub!,
    groups: c.namespace_group === null ? undefined : [c.namespace_group.replaceAll('{namespace}', namespace)],
    serviceAccount: true,
    expiresAt,
  };
}
