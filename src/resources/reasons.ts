/**
 * Every reason flowgate gives for an authorization decision, declared once: the verdict, a refusal's
 * error, the request log line, `flowgate_authz_decisions_total{reason}` and `permissions/explain` all
 * carry one of these, never a free string (a request refused without one carries its error code
 * instead). `outcome` is what the reason can decide; `where` is the stage that gives it (`route`
 * and `grant` are `decide()`'s); `means` is its line in docs/operations.md, which a test holds to this.
 */
interface ReasonSpec {
  /** `none`: the request ended before any decision (the log line has the reason; no decision is counted). */
  readonly outcome: 'allow' | 'deny' | 'either' | 'none';
  readonly where: 'route' | 'grant' | 'check' | 'gate' | 'admin-api' | 'explain' | 'request';
  readonly means: string;
}

const REASONS = {
  // decide(): the route's need, then the caller's grants on the route's resources (GrantFacts)
  'public-route': { outcome: 'allow', where: 'route', means: 'the route needs no sign-in' },
  admin: { outcome: 'allow', where: 'route', means: 'the caller is an administrator' },
  'authenticated-route': { outcome: 'allow', where: 'route', means: 'any signed-in caller may use the route' },
  'admin-only-route': { outcome: 'deny', where: 'route', means: 'the route is for administrators only' },
  'create-open': { outcome: 'allow', where: 'route', means: 'the call creates a new top-level resource, which every signed-in caller may' },
  'create-admin-only': { outcome: 'deny', where: 'route', means: 'the call creates a new top-level resource, which only administrators may (FLOWGATE_CREATE_REQUIRES_ADMIN)' },
  'direct-grant': { outcome: 'either', where: 'grant', means: "the caller's own grant on the resource" },
  'group-grant': { outcome: 'either', where: 'grant', means: "the strongest grant of the caller's groups on the resource" },
  'group-deny': { outcome: 'deny', where: 'grant', means: "NO_PERMISSIONS on the resource for one of the caller's groups" },
  'pattern-grant': { outcome: 'either', where: 'grant', means: "the caller's own name-pattern grant (the resource has no grant for them)" },
  'group-pattern-grant': { outcome: 'either', where: 'grant', means: "the strongest name-pattern grant of the caller's groups" },
  'group-pattern-deny': { outcome: 'deny', where: 'grant', means: "a NO_PERMISSIONS name-pattern grant of one of the caller's groups" },
  'default-permission': { outcome: 'either', where: 'grant', means: 'no grant bears on the resource: the default permission decides' },
  'workspace-manage': { outcome: 'allow', where: 'grant', means: "the caller administers the request's MLflow workspace (MANAGE on it): MANAGE on everything in it" },
  'workspace-non-member': { outcome: 'deny', where: 'grant', means: "the caller holds no role in the request's MLflow workspace: no default permission there, and no creating in it" },
  // evaluate(): the further checks a catalog row declares
  'not-reserved': { outcome: 'allow', where: 'check', means: 'a field only administrators may set is not set (a check, never the deciding one)' },
  'reserved-field': { outcome: 'deny', where: 'check', means: 'the request sets a field or tag only administrators may set' },
  'object-in-other-experiment': { outcome: 'deny', where: 'check', means: 'a client-chosen id names an existing object of another experiment' },
  'queue-member': { outcome: 'allow', where: 'check', means: 'the caller is assigned to the review queue (or may manage its experiment)' },
  'not-queue-member': { outcome: 'deny', where: 'check', means: 'the caller is not assigned to the review queue' },
  'job-starter': { outcome: 'allow', where: 'check', means: 'the caller started the job the route names' },
  'not-job-starter': { outcome: 'deny', where: 'check', means: 'the caller did not start the job the route names (or no starter is recorded for it)' },
  'model-source-unverifiable': { outcome: 'deny', where: 'check', means: "a model version's source flowgate cannot check (not a run, logged model or served artifact path, or with `..`)" },
  // the gate and the pipeline around it
  'route-not-found': { outcome: 'deny', where: 'gate', means: 'not an MLflow route the catalog knows (administrators pass)' },
  'answer-changed': { outcome: 'deny', where: 'gate', means: 'MLflow answered a request by name with an experiment other than the one decided on (renamed meanwhile)' },
  'cors-preflight': { outcome: 'allow', where: 'gate', means: 'a CORS preflight passed to MLflow unauthenticated (FLOWGATE_SKIP_AUTH_PREFLIGHT)' },
  // the admin API's access rules
  self: { outcome: 'allow', where: 'admin-api', means: "the route is about the caller's own account" },
  'not-self': { outcome: 'deny', where: 'admin-api', means: "the route is about another user's account (administrators only)" },
  'manage-grant': { outcome: 'allow', where: 'admin-api', means: 'the caller holds MANAGE on the resource whose grants the route reads or changes' },
  'no-manage-grant': { outcome: 'deny', where: 'admin-api', means: 'the caller does not hold MANAGE on the resource whose grants the route reads or changes' },
  // permissions/explain
  'not-readable': { outcome: 'deny', where: 'explain', means: 'explain was asked about something the caller may not read, or that does not exist' },
  // requests that end before a decision
  'request-framing': { outcome: 'none', where: 'request', means: "the request's framing headers are ambiguous or unsupported (400)" },
  'body-timeout': { outcome: 'none', where: 'request', means: "the request's body did not arrive in time (408)" },
  'client-closed': { outcome: 'none', where: 'request', means: 'the client went away while its body was read (logged as 499)' },
  'lookup-route-missing': { outcome: 'none', where: 'request', means: "a look-up the running MLflow's version cannot answer (404)" },
} as const satisfies Record<string, ReasonSpec>;

export type Reason = keyof typeof REASONS;

/** Every reason, in the order docs list them. */
export const REASON_NAMES = Object.keys(REASONS) as readonly Reason[];

export const REASON_SPECS: Readonly<Record<Reason, ReasonSpec>> = REASONS;

type ReasonsWhere<W extends ReasonSpec['where']> = { [R in Reason]: (typeof REASONS)[R]['where'] extends W ? R : never }[Reason];

/** The reasons the caller's standing in an MLflow workspace gives, around the grants on the resource. */
export type WorkspaceReason = Extract<Reason, 'workspace-manage' | 'workspace-non-member'>;

/** Which grant (or the default) made a caller's effective permission on a resource. */
export type GrantReason = Exclude<ReasonsWhere<'grant'>, WorkspaceReason>;

/** The grant reasons a name pattern gives. */
export type PatternReason = Extract<GrantReason, 'pattern-grant' | 'group-pattern-grant' | 'group-pattern-deny'>;

/** What `decide()` answers: the route's need, or the grants on the route's resources. */
export type DecisionReason = ReasonsWhere<'route'> | GrantReason | WorkspaceReason;

/** What an admin API route's access rule answers. */
export type AdminAccessReason = Extract<Reason, 'admin' | 'admin-only-route' | 'authenticated-route'> | ReasonsWhere<'admin-api'>;
