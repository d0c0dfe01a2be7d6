import { jsonProblem } from './json-problem.js';
import { readFileSync } from 'node:fs';
import { unreadableFile } from './unreadable-file.js';
import { z } from 'zod';
import { parseWorkspaceGroupRules, type WorkspaceGroupRule } from './workspaces/group-rules.js';
import { parseBearerIssuers, type BearerConfig } from './bearer/config.js';
import type { ScimConfig } from './scim/index.js';
import { closestName } from './closest-name.js';
import { PERMISSIONS, type Permission } from './resources/permissions.js';
import { defaultQueryTimeoutMs } from './store/query-timeout.js';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce.number().int().min(0).max(65535);
const url = z.url({ message: 'expected an absolute http(s) URL' }).refine((v) => /^https?:\/\//.test(v), {
  message: 'expected an http or https URL',
});
const basePath = z
  .string()
  .transform((v) => v.replace(/\/+$/, ''))
  .refine((v) => v === '' || /^\/[A-Za-z0-9._~\-/]*$/.test(v), {
    message: 'expected empty or a path such as /mlflow',
  });
const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** Every environment variable flowgate reads, with its default. docs/configuration.md's table mirrors this. */
const envSchema = z.object({
  FLOWGATE_HOST: z.string().min(1).default('0.0.0.0'),
  FLOWGATE_PORT: port.default(8080),
  FLOWGATE_UPSTREAM_URL: url.default('http://127.0.0.1:5000'),
  FLOWGATE_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
  FLOWGATE_UPSTREAM_STATIC_PREFIX: basePath.default(''),
  FLOWGATE_DB_PATH: z.string().min(1).default('./data/flowgate.db'),
  FLOWGATE_DATABASE_URL: z
    .string()
    .refine((v) => /^postgres(ql)?:\/\/[^/]/.test(v) && URL.canParse(v), { message: 'expected postgres://user:password@host:port/database' })
    .optional(),
  FLOWGATE_DATABASE_URL_FILE: z.string().min(1).optional(),
  FLOWGATE_DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  FLOWGATE_DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  /** Unset: the statement timeout + 1 s (src/store/postgres-store.ts). */
  FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).optional(),
  FLOWGATE_DATABASE_CA_FILE: z.string().min(1).optional(),
  FLOWGATE_BASE_PATH: basePath.default(''),
  FLOWGATE_DEFAULT_PERMISSION: z.enum(PERMISSIONS).default('NO_PERMISSIONS'),
  FLOWGATE_CREATE_REQUIRES_ADMIN: bool.default(false),
  FLOWGATE_DEFAULT_WORKSPACE_OPEN: bool.default(true),
  FLOWGATE_WORKSPACE_GROUP_RULES: z.string().optional(),
  FLOWGATE_ENFORCE: bool.default(true),
  FLOWGATE_SKIP_AUTH_PREFLIGHT: bool.default(false),
  FLOWGATE_ADMIN_USERNAME: z.string().regex(/^[A-Za-z0-9._@-]{1,128}$/).optional(),
  FLOWGATE_ADMIN_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  FLOWGATE_ADMIN_TOKEN_FILE: z.string().min(1).optional(),
  FLOWGATE_TOKEN_MAX_DAYS: z.coerce.number().int().min(1).max(3650).default(366),
  FLOWGATE_TOKEN_CACHE_SIZE: z.coerce.number().int().min(16).default(10_000),
  FLOWGATE_LEGACY_PASSWORDS: z.enum(['on', 'off']).default('on'),
  FLOWGATE_STORE_WATCH_MS: z.coerce.number().int().min(0).default(1000),
  FLOWGATE_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  FLOWGATE_BODY_READ_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  FLOWGATE_LOOKUP_CACHE_SIZE: z.coerce.number().int().min(16).default(10_000),
  FLOWGATE_LOOKUP_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
  FLOWGATE_METRICS_HOST: z.string().min(1).default('0.0.0.0'),
  FLOWGATE_METRICS_PORT: port.default(9090),
  FLOWGATE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  FLOWGATE_TRUSTED_REQUEST_ID_HEADER: z.string().min(1).default('x-request-id'),
  FLOWGATE_DECISION_LOG: z.enum(['off', 'stdout', 'file', 'otlp']).default('off'),
  FLOWGATE_DECISION_LOG_FILE: z.string().min(1).optional(),
  FLOWGATE_DECISION_LOG_ALLOW_SAMPLE: z.coerce.number().min(0).max(1).default(1),
  FLOWGATE_DECISION_LOG_MASK: list.pipe(z.array(z.enum(['user', 'resources']))).optional(),
  FLOWGATE_DECISION_LOG_MASK_KEY: z.string().min(1).optional(),
  /** Unset: no tracing at all (src/tracing/ is not even loaded). */
  FLOWGATE_OTEL_TRACES_ENDPOINT: url.optional(),
  FLOWGATE_OTEL_LOGS_ENDPOINT: url.optional(),
  FLOWGATE_OTEL_SERVICE_NAME: z.string().min(1).max(256).default('flowgate'),
  FLOWGATE_OTEL_SAMPLE_RATIO: z.coerce.number().min(0).max(1).default(1),
  FLOWGATE_OIDC_ISSUER_URL: url.optional(),
  FLOWGATE_OIDC_CLIENT_ID: z.string().min(1).optional(),
  FLOWGATE_OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  FLOWGATE_OIDC_CLIENT_SECRET_FILE: z.string().min(1).optional(),
  FLOWGATE_OIDC_REDIRECT_URL: url.optional(),
  FLOWGATE_OIDC_SCOPES: z.string().min(1).default('openid profile email'),
  FLOWGATE_OIDC_GROUPS_CLAIM: z.string().min(1).default('groups'),
  FLOWGATE_OIDC_USERNAME_CLAIM: z.string().min(1).default('preferred_username'),
  FLOWGATE_OIDC_DISPLAY_NAME_CLAIM: z.string().min(1).default('name'),
  FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL: bool.default(false),
  FLOWGATE_OIDC_ADMIN_ROLE: z.string().min(1).optional(),
  FLOWGATE_OIDC_ALLOWED_ROLES: list.optional(),
  /** JSON array of the issuers whose JWTs are accepted as Bearer tokens (src/bearer/config.ts). */
  FLOWGATE_BEARER_ISSUERS: z.string().min(1).optional(),
  FLOWGATE_BEARER_ISSUERS_FILE: z.string().min(1).optional(),
  FLOWGATE_BEARER_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(0).max(300).default(30),
  FLOWGATE_BEARER_MAX_TOKEN_BYTES: z.coerce.number().int().min(1024).max(65_536).default(8192),
  /** SCIM 2.0 provisioning at /scim/v2 (src/scim/): on when its token file is set. */
  FLOWGATE_SCIM_TOKEN_FILE: z.string().min(1).optional(),
  FLOWGATE_SCIM_TOKEN_GRACE_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  FLOWGATE_SCIM_RATE_PER_SECOND: z.coerce.number().min(0.1).max(10_000).default(10),
  FLOWGATE_SCIM_BURST: z.coerce.number().int().min(1).max(100_000).default(50),
  FLOWGATE_SESSION_COOKIE_SECURE: bool.default(true),
  FLOWGATE_SESSION_IDLE_MINUTES: z.coerce.number().int().min(1).default(60),
  FLOWGATE_SESSION_ABSOLUTE_HOURS: z.coerce.number().int().min(1).default(12),
  FLOWGATE_INFERENCE_CONFIG_FILE: z.string().min(1).optional(),
  FLOWGATE_INFERENCE_API_KEYS: z.string().min(1).optional(),
  FLOWGATE_PAGE_TOKEN_KEY: z.string().min(1).optional(),
  FLOWGATE_PAGE_TOKEN_KEY_FILE: z.string().min(1).optional(),
  FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS: list.optional(),
});

export type Env = Record<string, string | undefined>;

/** The name of every setting, from the schema itself. */
export const SETTING_NAMES: readonly string[] = Object.keys(envSchema.shape);

/** Names flowgate's own scripts, tests and bench read (not settings): the server lets them pass. */
export const TOOLING_VARIABLES: ReadonlySet<string> = new Set([
  'FLOWGATE_MLFLOW_VERSION',
  'FLOWGATE_MLFLOW_VENV',
  'FLOWGATE_MLFLOW_OIDC_AUTH_VERSION',
  'FLOWGATE_MLFLOW_OIDC_AUTH_VENV',
  'FLOWGATE_CHROMIUM',
  'FLOWGATE_BIG_ARTIFACT_MB',
  'FLOWGATE_TEST_STORE',
  'FLOWGATE_TEST_POSTGRES_URL',
  'FLOWGATE_HELM_VERSION',
  'FLOWGATE_KEYCLOAK_VERSION',
  'FLOWGATE_LATENCY_ROWS',
  'FLOWGATE_MLFLOW_OTEL_VENV',
  'FLOWGATE_OTEL_CONTRIB_VERSION',
  'FLOWGATE_OTEL_SDK_VERSION',
]);

/** Secrets that may also come from a file (`<name>_FILE`, a mounted Secret), so they need not sit in the environment. */
const FILE_BACKED_SECRETS = ['FLOWGATE_DATABASE_URL', 'FLOWGATE_OIDC_CLIENT_SECRET'] as const;

/**
 * Puts each file-backed secret's file content (trimmed) in the settings in place of its `_FILE`, and
 * answers the names so filled, for messages to name the file setting. The content is never echoed.
 */
function secretsFromFiles(merged: Env, readFile: (path: string) => string, problems: string[]): Set<string> {
  const filled = new Set<string>();
  for (const name of FILE_BACKED_SECRETS) {
    const file = merged[`${name}_FILE`];
    if (file === undefined) continue;
    if (merged[name] !== undefined) {
      problems.push(`${name}_FILE: set either it or ${name}, not both`);
      continue;
    }
    try {
      const text = readFile(file).trim();
      if (text === '') problems.push(`${name}_FILE: the file is empty`);
      else {
        merged[name] = text;
        filled.add(name);
      }
    } catch (err) {
      problems.push(`${name}_FILE: ${unreadableFile(file, err)}`);
    }
  }
  return filled;
}

/** A mistyped setting would otherwise be ignored silently: every unknown name is a problem, with the likely one. */
function unknownSettings(names: Iterable<string>, problems: string[]): void {
  const known = [...SETTING_NAMES, 'FLOWGATE_CONFIG_FILE'];
  for (const name of names) {
    if (!name.startsWith('FLOWGATE_') || known.includes(name) || TOOLING_VARIABLES.has(name)) continue;
    const near = closestName(name, known);
    problems.push(`${name}: not a flowgate setting${near ? `; did you mean ${near}?` : ''} (see docs/configuration.md)`);
  }
}

export interface OidcConfig {
  readonly issuerUrl: string;
  readonly clientId: string;
  readonly clientSecret: string | undefined;
  readonly redirectUrl: string | undefined;
  readonly scopes: string;
  readonly groupsClaim: string;
  readonly usernameClaim: string;
  /** With the name from `email`: an address the provider has not verified names its user too (providers that never send email_verified). */
  readonly allowUnverifiedEmail: boolean;
  readonly displayNameClaim: string;
  readonly adminRole: string | undefined;
  readonly allowedRoles: readonly string[] | undefined;
}

/** One event per decision, apart from the request log, for a security log system. */
export interface DecisionLogConfig {
  readonly destination: 'off' | 'stdout' | 'file' | 'otlp';
  readonly file: string | undefined;
  /** With `otlp`: the OTLP/HTTP logs endpoint and the service name the events are sent as. */
  readonly otlp: { readonly endpoint: string; readonly serviceName: string } | undefined;
  /** The share of allows written (denies always are). */
  readonly allowSample: number;
  /** Fields written as keyed pseudonyms instead of their values. */
  readonly mask: readonly ('user' | 'resources')[];
  /** The pseudonyms' key (32 bytes); unset: a random one per process, so pseudonyms do not link across restarts. */
  readonly maskKey: Buffer | undefined;
}

/** OpenTelemetry traces, sent over OTLP/HTTP (JSON) to a collector. */
export interface TracingConfig {
  /** The full traces URL, e.g. `http://otel-collector:4318/v1/traces`. */
  readonly endpoint: string;
  readonly serviceName: string;
  /** The share of requests traced: a new trace by its trace id, one continuing a client's by a fresh draw (the client's trace id and sampled flag do not change it). */
  readonly sampleRatio: number;
}

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly upstreamUrl: string;
  readonly upstreamTimeoutMs: number;
  /** MLflow's own `--static-prefix`, when it runs with one. */
  readonly upstreamStaticPrefix: string;
  readonly dbPath: string;
  /** The shared PostgreSQL store (replicas); unset: the embedded SQLite file at `dbPath`. */
  readonly databaseUrl: string | undefined;
  readonly postgres: {
    readonly poolSize: number;
    readonly statementTimeoutMs: number;
    readonly connectTimeoutMs: number;
    /** How long flowgate waits on one statement, its connection included, before the request gets 503. */
    readonly queryTimeoutMs: number;
    /** PEM read from FLOWGATE_DATABASE_CA_FILE: verified TLS to PostgreSQL. */
    readonly caCertificate: string | undefined;
  };
  readonly basePath: string;
  readonly defaultPermission: Permission;
  readonly createRequiresAdmin: boolean;
  /** With MLflow's workspaces on: every signed-in user is a member (USE) of the `default` workspace without a grant. */
  readonly defaultWorkspaceOpen: boolean;
  /** Identity-provider groups given a role in a workspace by rule (FLOWGATE_WORKSPACE_GROUP_RULES). */
  readonly workspaceGroupRules: readonly WorkspaceGroupRule[];
  /** False in shadow mode: refusals of MLflow calls are logged and counted as would-deny, and forwarded. */
  readonly enforce: boolean;
  /** CORS preflights to MLflow routes go to MLflow unauthenticated, for MLflow's own CORS rules to answer. */
  readonly skipAuthPreflight: boolean;
  readonly admin: { readonly username: string; readonly token: string } | undefined;
  readonly tokenMaxDays: number;
  readonly tokenCacheSize: number;
  /** Passwords imported from MLflow basic-auth still authenticate over HTTP Basic (until the user mints a token). */
  readonly legacyPasswords: boolean;
  /** How often to look for commits another process made to the store (0: never). */
  readonly storeWatchMs: number;
  readonly maxBodyBytes: number;
  /** How long a JSON body flowgate reads itself may take to arrive (then 408). */
  readonly bodyReadTimeoutMs: number;
  readonly lookupCacheSize: number;
  readonly lookupCacheTtlMs: number;
  readonly metricsHost: string;
  readonly metricsPort: number;
  readonly logLevel: string;
  readonly trustedRequestIdHeader: string;
  readonly decisionLog: DecisionLogConfig;
  /** Unset: tracing off (no tracer, no span on any request). */
  readonly tracing: TracingConfig | undefined;
  readonly oidc: OidcConfig | undefined;
  /** JWTs of configured issuers (OIDC providers, Kubernetes clusters) accepted as `Authorization: Bearer`; unset: none. */
  readonly bearer: BearerConfig | undefined;
  /** SCIM 2.0 provisioning; unset: no SCIM endpoint. */
  readonly scim: ScimConfig | undefined;
  readonly session: { readonly cookieSecure: boolean; readonly idleMinutes: number; readonly absoluteHours: number };
  readonly inferenceConfigFile: string | undefined;
  /** Comma-separated inference keys valid on every route (prefer the key file, which rotates). */
  readonly inferenceApiKeys: string | undefined;
  /** Keys sealing search page tokens: `current` seals (the store's own key when unset), `previous` only open. */
  readonly pageTokenKeys: { readonly current: Buffer | undefined; readonly previous: readonly Buffer[] };
}

/**
 * A TLS setting in the database URL that contradicts the CA file (plaintext, optional or unverified TLS):
 * which one wins would be a guess, so it is refused. Named alone, never with the rest of the URL (its password).
 */
function weakerUrlTls(url: string): string | undefined {
  const params = new URL(url).searchParams;
  const sslmode = params.get('sslmode');
  if (sslmode !== null && ['disable', 'allow', 'prefer', 'no-verify'].includes(sslmode)) return `sslmode=${sslmode}`;
  if (params.has('uselibpqcompat')) return 'uselibpqcompat (libpq TLS modes)';
  const ssl = params.get('ssl');
  if (ssl === '0' || ssl === 'false') return `ssl=${ssl}`;
  return undefined;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads a JSON file named by FLOWGATE_CONFIG_FILE (keys are the variable names); the environment
 * wins over the file. Every problem is collected before failing.
 */
export function loadConfig(env: Env, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): Config {
  const problems: string[] = [];
  let fromFile: Env = {};
  if (env.FLOWGATE_CONFIG_FILE) {
    try {
      const parsed: unknown = JSON.parse(readFile(env.FLOWGATE_CONFIG_FILE));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      // A list or object (the bearer issuers) is the JSON text its variable takes, not `[object Object]`.
      fromFile = Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)]));
    } catch (e) {
      problems.push(`FLOWGATE_CONFIG_FILE: cannot read a JSON object from it (${jsonProblem(e)})`);
    }
  }
  unknownSettings(new Set([...Object.keys(fromFile), ...Object.keys(env)]), problems);
  const merged: Env = { ...fromFile };
  for (const [k, v] of Object.entries(env)) if (k.startsWith('FLOWGATE_') && v !== undefined && v !== '') merged[k] = v;
  if (env.FLOWGATE_BASE_PATH === '') merged.FLOWGATE_BASE_PATH = '';

  const fromFiles = secretsFromFiles(merged, readFile, problems);
  let parsed = envSchema.safeParse(merged);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path.join('.');
      problems.push(`${fromFiles.has(name) ? `${name}_FILE` : name}: ${issue.message}`);
    }
    // The checks across settings still run on the ones that did parse, so every problem is told at once.
    const refused = new Set(parsed.error.issues.map((issue) => String(issue.path[0])));
    parsed = envSchema.safeParse(Object.fromEntries(Object.entries(merged).filter(([name]) => !refused.has(name))));
    if (!parsed.success) throw new ConfigError(problems);
  }
  const e = parsed.data;

  let admin: Config['admin'];
  let adminToken = e.FLOWGATE_ADMIN_TOKEN;
  let adminTokenUnread = false;
  if (e.FLOWGATE_ADMIN_TOKEN_FILE) {
    if (adminToken) problems.push('FLOWGATE_ADMIN_TOKEN_FILE: set either it or FLOWGATE_ADMIN_TOKEN, not both');
    try {
      adminToken = readFile(e.FLOWGATE_ADMIN_TOKEN_FILE).trim();
      if (adminToken.length < 32) problems.push('FLOWGATE_ADMIN_TOKEN_FILE: the token must be at least 32 characters');
    } catch (err) {
      adminTokenUnread = true;
      problems.push(`FLOWGATE_ADMIN_TOKEN_FILE: ${unreadableFile(e.FLOWGATE_ADMIN_TOKEN_FILE, err)}`);
    }
  }
  // An unread token file is its one problem: the admin and shadow-mode rules below would only echo it.
  if (e.FLOWGATE_ADMIN_USERNAME && adminToken) admin = { username: e.FLOWGATE_ADMIN_USERNAME, token: adminToken };
  else if (!adminTokenUnread && (e.FLOWGATE_ADMIN_USERNAME || adminToken))
    problems.push('FLOWGATE_ADMIN_USERNAME: set together with FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE');

  // Shadow mode lets every signed-in caller through to MLflow, while the admin API that changes
  // policy stays enforced: an operator-held admin credential must exist to prepare that policy.
  if (!e.FLOWGATE_ENFORCE && !adminToken && !adminTokenUnread)
    problems.push(
      'FLOWGATE_ENFORCE: false (shadow mode) requires the bootstrap admin (FLOWGATE_ADMIN_USERNAME with FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE)',
    );

  const parsedRules = parseWorkspaceGroupRules(e.FLOWGATE_WORKSPACE_GROUP_RULES ?? '');
  if (typeof parsedRules === 'string') problems.push(`FLOWGATE_WORKSPACE_GROUP_RULES: ${parsedRules}`);
  const workspaceGroupRules = typeof parsedRules === 'string' ? [] : parsedRules;

  let oidc: OidcConfig | undefined;
  if (e.FLOWGATE_OIDC_ISSUER_URL) {
    if (!e.FLOWGATE_OIDC_CLIENT_ID) problems.push('FLOWGATE_OIDC_CLIENT_ID: required when FLOWGATE_OIDC_ISSUER_URL is set');
    const issuer = new URL(e.FLOWGATE_OIDC_ISSUER_URL);
    if (issuer.protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname))
      problems.push('FLOWGATE_OIDC_ISSUER_URL: must be https (plain http only for a provider on loopback)');
    const callbackPath = `${e.FLOWGATE_BASE_PATH}/flowgate/callback`;
    if (!e.FLOWGATE_OIDC_REDIRECT_URL)
      problems.push(`FLOWGATE_OIDC_REDIRECT_URL: required with OIDC: the external URL of ${callbackPath}, e.g. https://mlflow.example.com${callbackPath}`);
    else if (new URL(e.FLOWGATE_OIDC_REDIRECT_URL).pathname !== callbackPath)
      problems.push(`FLOWGATE_OIDC_REDIRECT_URL: its path must be ${callbackPath} (flowgate's callback under FLOWGATE_BASE_PATH)`);
    else if (new URL(e.FLOWGATE_OIDC_REDIRECT_URL).protocol === 'http:' && e.FLOWGATE_SESSION_COOKIE_SECURE)
      problems.push('FLOWGATE_OIDC_REDIRECT_URL: is plain http, so Secure cookies would never be sent back; use https or set FLOWGATE_SESSION_COOKIE_SECURE=false (development only)');
    oidc = {
      issuerUrl: e.FLOWGATE_OIDC_ISSUER_URL,
      clientId: e.FLOWGATE_OIDC_CLIENT_ID ?? '',
      clientSecret: e.FLOWGATE_OIDC_CLIENT_SECRET,
      redirectUrl: e.FLOWGATE_OIDC_REDIRECT_URL,
      scopes: e.FLOWGATE_OIDC_SCOPES,
      groupsClaim: e.FLOWGATE_OIDC_GROUPS_CLAIM,
      usernameClaim: e.FLOWGATE_OIDC_USERNAME_CLAIM,
      allowUnverifiedEmail: e.FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL,
      displayNameClaim: e.FLOWGATE_OIDC_DISPLAY_NAME_CLAIM,
      adminRole: e.FLOWGATE_OIDC_ADMIN_ROLE,
      allowedRoles: e.FLOWGATE_OIDC_ALLOWED_ROLES,
    };
  }
  if (e.FLOWGATE_METRICS_PORT !== 0 && e.FLOWGATE_METRICS_PORT === e.FLOWGATE_PORT)
    problems.push('FLOWGATE_METRICS_PORT: must differ from FLOWGATE_PORT (metrics never share the public listener)');
  const decisionLog = readDecisionLog(e, problems);
  // Keys for no route would be ignored in silence: the inference routes come from the config file.
  if (e.FLOWGATE_INFERENCE_API_KEYS && !e.FLOWGATE_INFERENCE_CONFIG_FILE)
    problems.push('FLOWGATE_INFERENCE_API_KEYS: set only with FLOWGATE_INFERENCE_CONFIG_FILE (the inference routes they open)');
  const bearer = readBearer(e, readFile, problems);
  const scim = readScim(e, readFile, problems);
  const pageTokenKeys = readPageTokenKeys(e, readFile, problems);
  let caCertificate: string | undefined;
  if (e.FLOWGATE_DATABASE_CA_FILE) {
    if (!e.FLOWGATE_DATABASE_URL) problems.push('FLOWGATE_DATABASE_CA_FILE: set only with FLOWGATE_DATABASE_URL');
    try {
      caCertificate = readFile(e.FLOWGATE_DATABASE_CA_FILE);
    } catch {
      problems.push('FLOWGATE_DATABASE_CA_FILE: cannot read the file');
    }
    if (e.FLOWGATE_DATABASE_URL) {
      const conflict = weakerUrlTls(e.FLOWGATE_DATABASE_URL);
      if (conflict)
        problems.push(
          `FLOWGATE_DATABASE_CA_FILE: means TLS with PostgreSQL's certificate verified, but FLOWGATE_DATABASE_URL asks for ${conflict}; remove it from the URL (or use sslmode=verify-full)`,
        );
    }
  }
  const queryTimeoutMs = e.FLOWGATE_DATABASE_QUERY_TIMEOUT_MS ?? defaultQueryTimeoutMs(e.FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS);
  // The server's own cancel must come first: it keeps the connection, the client's closes it.
  if (queryTimeoutMs <= e.FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS)
    problems.push(
      `FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: must be longer than FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS (${e.FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS}), so PostgreSQL cancels a slow statement before flowgate gives up on the connection`,
    );
  if (problems.length) throw new ConfigError(problems);

  return Object.freeze({
    host: e.FLOWGATE_HOST,
    port: e.FLOWGATE_PORT,
    upstreamUrl: e.FLOWGATE_UPSTREAM_URL.replace(/\/+$/, ''),
    upstreamTimeoutMs: e.FLOWGATE_UPSTREAM_TIMEOUT_MS,
    upstreamStaticPrefix: e.FLOWGATE_UPSTREAM_STATIC_PREFIX,
    dbPath: e.FLOWGATE_DB_PATH,
    databaseUrl: e.FLOWGATE_DATABASE_URL,
    postgres: {
      poolSize: e.FLOWGATE_DATABASE_POOL_SIZE,
      statementTimeoutMs: e.FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS,
      connectTimeoutMs: e.FLOWGATE_DATABASE_CONNECT_TIMEOUT_MS,
      queryTimeoutMs,
      caCertificate,
    },
    basePath: e.FLOWGATE_BASE_PATH,
    defaultPermission: e.FLOWGATE_DEFAULT_PERMISSION,
    createRequiresAdmin: e.FLOWGATE_CREATE_REQUIRES_ADMIN,
    defaultWorkspaceOpen: e.FLOWGATE_DEFAULT_WORKSPACE_OPEN,
    workspaceGroupRules,
    enforce: e.FLOWGATE_ENFORCE,
    skipAuthPreflight: e.FLOWGATE_SKIP_AUTH_PREFLIGHT,
    admin,
    tokenMaxDays: e.FLOWGATE_TOKEN_MAX_DAYS,
    tokenCacheSize: e.FLOWGATE_TOKEN_CACHE_SIZE,
    legacyPasswords: e.FLOWGATE_LEGACY_PASSWORDS === 'on',
    storeWatchMs: e.FLOWGATE_STORE_WATCH_MS,
    maxBodyBytes: e.FLOWGATE_MAX_BODY_BYTES,
    bodyReadTimeoutMs: e.FLOWGATE_BODY_READ_TIMEOUT_MS,
    lookupCacheSize: e.FLOWGATE_LOOKUP_CACHE_SIZE,
    lookupCacheTtlMs: e.FLOWGATE_LOOKUP_CACHE_TTL_MS,
    metricsHost: e.FLOWGATE_METRICS_HOST,
    metricsPort: e.FLOWGATE_METRICS_PORT,
    logLevel: e.FLOWGATE_LOG_LEVEL,
    trustedRequestIdHeader: e.FLOWGATE_TRUSTED_REQUEST_ID_HEADER.toLowerCase(),
    decisionLog,
    tracing: e.FLOWGATE_OTEL_TRACES_ENDPOINT
      ? { endpoint: e.FLOWGATE_OTEL_TRACES_ENDPOINT, serviceName: e.FLOWGATE_OTEL_SERVICE_NAME, sampleRatio: e.FLOWGATE_OTEL_SAMPLE_RATIO }
      : undefined,
    oidc,
    bearer,
    scim,
    session: {
      cookieSecure: e.FLOWGATE_SESSION_COOKIE_SECURE,
      idleMinutes: e.FLOWGATE_SESSION_IDLE_MINUTES,
      absoluteHours: e.FLOWGATE_SESSION_ABSOLUTE_HOURS,
    },
    inferenceConfigFile: e.FLOWGATE_INFERENCE_CONFIG_FILE,
    inferenceApiKeys: e.FLOWGATE_INFERENCE_API_KEYS,
    pageTokenKeys,
  });
}

function readDecisionLog(e: z.infer<typeof envSchema>, problems: string[]): DecisionLogConfig {
  if (e.FLOWGATE_DECISION_LOG === 'file' && !e.FLOWGATE_DECISION_LOG_FILE) problems.push('FLOWGATE_DECISION_LOG_FILE: required when FLOWGATE_DECISION_LOG=file');
  if (e.FLOWGATE_DECISION_LOG !== 'file' && e.FLOWGATE_DECISION_LOG_FILE) problems.push('FLOWGATE_DECISION_LOG_FILE: set only with FLOWGATE_DECISION_LOG=file');
  if (e.FLOWGATE_DECISION_LOG === 'otlp' && !e.FLOWGATE_OTEL_LOGS_ENDPOINT) problems.push('FLOWGATE_OTEL_LOGS_ENDPOINT: required when FLOWGATE_DECISION_LOG=otlp');
  if (e.FLOWGATE_DECISION_LOG !== 'otlp' && e.FLOWGATE_OTEL_LOGS_ENDPOINT) problems.push('FLOWGATE_OTEL_LOGS_ENDPOINT: set only with FLOWGATE_DECISION_LOG=otlp');
  if (e.FLOWGATE_DECISION_LOG === 'stdout' && (e.FLOWGATE_DECISION_LOG_MASK ?? []).length > 0)
    problems.push('FLOWGATE_DECISION_LOG_MASK: masks nothing with FLOWGATE_DECISION_LOG=stdout, where the request log shows the same users and ids unmasked: send the decision log to a file or to OTLP');
  let maskKey: Buffer | undefined;
  if (e.FLOWGATE_DECISION_LOG_MASK_KEY !== undefined) {
    maskKey = pageTokenKey(e.FLOWGATE_DECISION_LOG_MASK_KEY);
    if (maskKey === undefined) problems.push('FLOWGATE_DECISION_LOG_MASK_KEY: must be the base64 of 32 random bytes (openssl rand -base64 32)');
  }
  return {
    destination: e.FLOWGATE_DECISION_LOG,
    file: e.FLOWGATE_DECISION_LOG_FILE,
    otlp: e.FLOWGATE_DECISION_LOG === 'otlp' && e.FLOWGATE_OTEL_LOGS_ENDPOINT ? { endpoint: e.FLOWGATE_OTEL_LOGS_ENDPOINT, serviceName: e.FLOWGATE_OTEL_SERVICE_NAME } : undefined,
    allowSample: e.FLOWGATE_DECISION_LOG_ALLOW_SAMPLE,
    mask: e.FLOWGATE_DECISION_LOG_MASK ?? [],
    maskKey,
  };
}

/** A page-token key: standard base64 of exactly 32 bytes (`openssl rand -base64 32`). */
function pageTokenKey(text: string): Buffer | undefined {
  const key = Buffer.from(text, 'base64');
  return key.length === 32 && key.toString('base64') === text ? key : undefined;
}

function readPageTokenKeys(
  e: z.infer<typeof envSchema>,
  readFile: (path: string) => string,
  problems: string[],
): Config['pageTokenKeys'] {
  const must = 'must be the base64 of 32 random bytes (openssl rand -base64 32)';
  let current: Buffer | undefined;
  let text = e.FLOWGATE_PAGE_TOKEN_KEY;
  if (e.FLOWGATE_PAGE_TOKEN_KEY_FILE) {
    if (text) problems.push('FLOWGATE_PAGE_TOKEN_KEY_FILE: set either it or FLOWGATE_PAGE_TOKEN_KEY, not both');
    try {
      text = readFile(e.FLOWGATE_PAGE_TOKEN_KEY_FILE).trim();
    } catch {
      problems.push('FLOWGATE_PAGE_TOKEN_KEY_FILE: cannot read the file');
      text = undefined;
    }
  }
  if (text !== undefined) {
    current = pageTokenKey(text.trim());
    if (!current) problems.push(`${e.FLOWGATE_PAGE_TOKEN_KEY_FILE ? 'FLOWGATE_PAGE_TOKEN_KEY_FILE' : 'FLOWGATE_PAGE_TOKEN_KEY'}: ${must}`);
  }
  const previous: Buffer[] = [];
  (e.FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS ?? []).forEach((item, i) => {
    const key = pageTokenKey(item);
    if (key) previous.push(key);
    else problems.push(`FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS: key ${i + 1} ${must}`);
  });
  return { current, previous };
}

function readBearer(e: z.infer<typeof envSchema>, readFile: (path: string) => string, problems: string[]): BearerConfig | undefined {
  let text = e.FLOWGATE_BEARER_ISSUERS;
  let name = 'FLOWGATE_BEARER_ISSUERS';
  if (e.FLOWGATE_BEARER_ISSUERS_FILE) {
    if (text) problems.push('FLOWGATE_BEARER_ISSUERS_FILE: set either it or FLOWGATE_BEARER_ISSUERS, not both');
    name = 'FLOWGATE_BEARER_ISSUERS_FILE';
    try {
      text = readFile(e.FLOWGATE_BEARER_ISSUERS_FILE);
    } catch {
      problems.push('FLOWGATE_BEARER_ISSUERS_FILE: cannot read the file');
      return undefined;
    }
  }
  if (text === undefined) return undefined;
  const issuers = parseBearerIssuers(text, name, problems);
  return issuers && { issuers, clockSkewSeconds: e.FLOWGATE_BEARER_CLOCK_SKEW_SECONDS, maxTokenBytes: e.FLOWGATE_BEARER_MAX_TOKEN_BYTES };
}

function readScim(e: z.infer<typeof envSchema>, readFile: (path: string) => string, problems: string[]): ScimConfig | undefined {
  if (!e.FLOWGATE_SCIM_TOKEN_FILE) return undefined;
  try {
    // The same floor as src/scim/token-file.ts, which reads the file again as it is rewritten.
    if (readFile(e.FLOWGATE_SCIM_TOKEN_FILE).trim().length < 32) problems.push('FLOWGATE_SCIM_TOKEN_FILE: the token must be at least 32 characters');
  } catch {
    problems.push('FLOWGATE_SCIM_TOKEN_FILE: cannot read the file');
  }
  return {
    tokenFile: e.FLOWGATE_SCIM_TOKEN_FILE,
    graceSeconds: e.FLOWGATE_SCIM_TOKEN_GRACE_SECONDS,
    ratePerSecond: e.FLOWGATE_SCIM_RATE_PER_SECOND,
    burst: e.FLOWGATE_SCIM_BURST,
  };
}
