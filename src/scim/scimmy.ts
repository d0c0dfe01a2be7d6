import SCIMMY from 'scimmy';

/** What the SCIM resource handlers below do for one flowgate: `ctx` of every scimmy call. */
export interface ScimBackend {
  readonly users: ResourceHandlers;
  readonly groups: ResourceHandlers;
}

/** The parts of a scimmy resource instance the handlers read. */
export interface ScimRequestResource {
  readonly id?: string;
  readonly filter?: ScimFilter;
}
export interface ScimFilter {
  readonly expression: string;
  match<T extends object>(values: readonly T[]): T[];
  readonly [index: number]: Record<string, unknown>;
  readonly length: number;
}

export type ScimRecord = Record<string, unknown> & { readonly id: string };

export interface ResourceHandlers {
  /** One record (resource.id set) or every record the filter matches. */
  egress(resource: ScimRequestResource): Promise<ScimRecord | ScimRecord[]>;
  /** Create (no id) or replace (id) from the validated instance; answers the record as it now is. */
  ingress(resource: ScimRequestResource, instance: Record<string, unknown>): Promise<ScimRecord>;
  degress(resource: ScimRequestResource): Promise<void>;
}

/**
 * Attributes of the core User schema flowgate keeps nothing of: left out of the schema it publishes,
 * and dropped by scimmy from what a client sends (identity providers send names, e-mails and
 * extensions whatever the server says), so a client is never told a value was stored that was not.
 */
const USER_ATTRIBUTES_NOT_KEPT = [
  'name', 'nickName', 'profileUrl', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone', 'password',
  'emails', 'phoneNumbers', 'ims', 'photos', 'addresses', 'entitlements', 'roles', 'x509Certificates',
];

let declared = false;

/**
 * scimmy keeps its resource handlers and service-provider configuration in module-wide statics, so
 * they are declared once per process and find their flowgate through `ctx` (a process may hold
 * several flowgates, as the tests do).
 */
export function declareScimResources(basePath: string): typeof SCIMMY {
  const { Resources, Schemas, Config } = SCIMMY;
  // Published locations follow the flowgate that last opened (one per process outside tests).
  Resources.User.basepath(`${basePath}/scim/v2`);
  Resources.Group.basepath(`${basePath}/scim/v2`);
  if (declared) return SCIMMY;
  declared = true;
  Schemas.User.truncate(USER_ATTRIBUTES_NOT_KEPT);
  // A member's display name is the user's name, not something a client sets: not published as writable.
  Schemas.Group.truncate(['members.display']);
  Config.set({
    documentationUri: 'https://github.com/flowgate/flowgate/blob/main/docs/machine-identity.md#scim',
    patch: true,
    filter: { supported: true, maxResults: 200 },
    sort: true,
    etag: true,
    bulk: false,
    changePassword: false,
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer token',
        description: 'The token of FLOWGATE_SCIM_TOKEN_FILE, as Authorization: Bearer',
      },
    ],
  });
  const of = (ctx: unknown, kind: keyof ScimBackend): ResourceHandlers => (ctx as ScimBackend)[kind];
  Resources.declare(Resources.User, {
    ingress: (resource: ScimRequestResource, instance: Record<string, unknown>, ctx: unknown) => of(ctx, 'users').ingress(resource, instance),
    egress: (resource: ScimRequestResource, ctx: unknown) => of(ctx, 'users').egress(resource),
    degress: (resource: ScimRequestResource, ctx: unknown) => of(ctx, 'users').degress(resource),
  } as never);
  Resources.declare(Resources.Group, {
    ingress: (resource: ScimRequestResource, instance: Record<string, unknown>, ctx: unknown) => of(ctx, 'groups').ingress(resource, instance),
    egress: (resource: ScimRequestResource, ctx: unknown) => of(ctx, 'groups').egress(resource),
    degress: (resource: ScimRequestResource, ctx: unknown) => of(ctx, 'groups').degress(resource),
  } as never);
  return SCIMMY;
}
