import { jsonProblem } from '../json-problem.js';
import { z } from 'zod';
import { templatesOverlap } from './templates.js';

/**
 * The issuers whose JWTs flowgate accepts as `Authorization: Bearer` (FLOWGATE_BEARER_ISSUERS or
 * FLOWGATE_BEARER_ISSUERS_FILE): a JSON array, one object per issuer, validated here so a mistyped
 * key or an unsafe algorithm stops the start with a message naming it.
 */

/** Asymmetric signatures only: no `none`, no HS* (a public key must never be usable as an HMAC secret). */
export const BEARER_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
export type BearerAlgorithm = (typeof BEARER_ALGORITHMS)[number];

const LOOPBACK = ['127.0.0.1', 'localhost', '[::1]'];
/** https, or plain http on loopback only (tests, local development), as FLOWGATE_OIDC_ISSUER_URL. */
const fetchableUrl = z.url({ message: 'expected an absolute URL' }).refine(
  (v) => {
    const u = new URL(v);
    return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.includes(u.hostname));
  },
  { message: 'must be https (plain http only on loopback)' },
);
const claimPath = z.string().min(1).max(256);
const nonEmptyList = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1).max(16)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);
const template = (placeholders: readonly string[]) =>
  z
    .string()
    .min(1)
    .max(256)
    .refine((t) => [...t.matchAll(/\{([^}]*)\}/g)].every((m) => placeholders.includes(m[1]!)), {
      message: `the only placeholders are ${placeholders.map((p) => `{${p}}`).join(', ')}`,
    });

const common = {
  /** The exact `iss` of the tokens (no trailing-slash tolerance: the claim must equal it). */
  issuer: z.string().min(1).max(512),
  /** At least one must be in the token's `aud`. */
  audience: nonEmptyList(z.string().min(1).max(512)),
  /** The signing keys: a JWKS URL, a JWKS file (offline), or neither (OIDC discovery at `<issuer>/.well-known/openid-configuration`). */
  jwks_url: fetchableUrl.optional(),
  jwks_file: z.string().min(1).optional(),
  algorithms: z.array(z.enum(BEARER_ALGORITHMS, { message: `expected one of ${BEARER_ALGORITHMS.join(', ')} (never none or HS*)` })).min(1).default(['RS256']),
  /** A key id the cached keys do not have re-reads the keys at most this often. */
  jwks_cooldown_seconds: z.number().int().min(1).max(3600).default(30),
  /** Keys are re-read this long after the last read, whatever happens. */
  jwks_max_age_seconds: z.number().int().min(10).max(86_400).default(600),
};

const oidcIssuer = z.strictObject({
  kind: z.literal('oidc').default('oidc'),
  ...common,
  /** Tried in order, the first present names the principal: a person's `preferred_username`, a client's `client_id`/`azp`, then `sub`. */
  username_claim: nonEmptyList(claimPath).default(['preferred_username', 'client_id', 'azp', 'sub']),
  /** A name read from `email` names its user even when the issuer has not verified the address (issuers that never send email_verified). */
  insecure_allow_unverified_email: z.boolean().default(false),
  /** Where the groups are (a dotted path); `null`: memberships are left to administrators. */
  groups_claim: claimPath.nullable().default('groups'),
  /** Principals first seen through this issuer are service accounts (clients), not persons. */
  service_accounts: z.boolean().default(false),
  /** When set, a token must hold at least one of these groups (read at `groups_claim`), or it is refused (403). */
  required_groups: z.array(z.string().min(1).max(256)).min(1).max(64).optional(),
});

const kubernetesIssuer = z.strictObject({
  kind: z.literal('kubernetes'),
  ...common,
  /** The flowgate user name of `system:serviceaccount:<namespace>:<name>`. */
  username_template: template(['namespace', 'name']).default('k8s.{namespace}.{name}'),
  /** The group of the service account's namespace; `null`: memberships are left to administrators. */
  namespace_group: template(['namespace']).nullable().default('k8s:{namespace}'),
});

const issuerEntry = z.discriminatedUnion('kind', [oidcIssuer, kubernetesIssuer]).superRefine((v, ctx) => {
  if (v.jwks_url && v.jwks_file) ctx.addIssue({ code: 'custom', message: 'set jwks_url or jwks_file, not both', path: ['jwks_file'] });
  if (v.kind === 'oidc' && v.required_groups && v.groups_claim === null)
    ctx.addIssue({ code: 'custom', message: 'needs groups_claim: the required groups are read there', path: ['required_groups'] });
  if (!v.jwks_url && !v.jwks_file && !fetchableUrl.safeParse(v.issuer).success)
    ctx.addIssue({ code: 'custom', message: 'without jwks_url or jwks_file the keys come from discovery, so the issuer must be https (plain http only on loopback)', path: ['issuer'] });
});

/** Entries without `kind` are OIDC issuers. */
const withKind = z.preprocess((v) => (v && typeof v === 'object' && !Array.isArray(v) && !('kind' in v) ? { ...v, kind: 'oidc' } : v), issuerEntry);

export const bearerIssuersSchema = z
  .array(withKind)
  .min(1)
  .max(32)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((v, i) => {
      if (seen.has(v.issuer)) ctx.addIssue({ code: 'custom', message: `issuer ${v.issuer} is listed twice`, path: [i, 'issuer'] });
      seen.add(v.issuer);
    });
    // Two clusters must never make one same user or group: a dev cluster's team-a would get prod's
    // k8s:team-a grants, or squat the name of prod's service account before its first call.
    list.forEach((v, j) => {
      if (v.kind !== 'kubernetes') return;
      list.slice(0, j).forEach((u, i) => {
        if (u.kind !== 'kubernetes') return;
        if (templatesOverlap(u.username_template, v.username_template))
          ctx.addIssue({
            code: 'custom',
            message: `can make the same user names as [${i}].username_template (${JSON.stringify(u.username_template)}, issuer ${u.issuer}): give each kubernetes issuer its own, e.g. "k8s-<cluster>.{namespace}.{name}"`,
            path: [j, 'username_template'],
          });
        if (u.namespace_group !== null && v.namespace_group !== null && templatesOverlap(u.namespace_group, v.namespace_group))
          ctx.addIssue({
            code: 'custom',
            message: `can make the same groups as [${i}].namespace_group (${JSON.stringify(u.namespace_group)}, issuer ${u.issuer}): give each kubernetes issuer its own, e.g. "k8s:<cluster>:{namespace}"`,
            path: [j, 'namespace_group'],
          });
      });
    });
  });

export type BearerIssuerConfig = z.output<typeof issuerEntry>;
export type OidcBearerIssuer = Extract<BearerIssuerConfig, { kind: 'oidc' }>;
export type KubernetesBearerIssuer = Extract<BearerIssuerConfig, { kind: 'kubernetes' }>;

export interface BearerConfig {
  readonly issuers: readonly BearerIssuerConfig[];
  /** Leeway for `exp`, `nbf` and `iat`, in seconds. */
  readonly clockSkewSeconds: number;
  /** A longer `Authorization` value is refused before it is parsed. */
  readonly maxTokenBytes: number;
}

/** Parses the JSON text of FLOWGATE_BEARER_ISSUERS(_FILE); problems are pushed with `name` in front. */
export function parseBearerIssuers(text: string, name: string, problems: string[]): BearerIssuerConfig[] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    problems.push(`${name}: ${jsonProblem(e)}`);
    return undefined;
  }
  const parsed = bearerIssuersSchema.safeParse(json);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`${name}${issue.path.map((p) => `[${typeof p === 'number' ? p : JSON.stringify(p)}]`).join('')}: ${issue.message}`);
    return undefined;
  }
  return parsed.data;
}
