import { gatewayListing, idIsName, isGatewayKind, isResourceKind, KIND_SPECS, KINDS as SPECS, permissionsOf, type GatewayKind, type ResourceKind } from '../../src/resources/kinds.js';
import type { GrantIdField } from '../../src/admin/api-types.js';
import type { Permission } from '../../src/resources/permissions.js';

type Spec = (typeof SPECS)[ResourceKind];

/** A kind of resource the screens manage (src/resources/kind-table.ts declares them). */
export interface Kind {
  readonly kind: ResourceKind;
  /** The screens' route: `#/<route>` lists them, `#/<route>/<id>` opens one. */
  readonly route: Spec['ui']['route'];
  /** The admin API's path segment. */
  readonly segment: Spec['admin']['segment'];
  readonly title: string;
  readonly one: string;
}

export const KINDS: readonly Kind[] = KIND_SPECS.map((k) => ({ kind: k.kind, route: k.ui.route, segment: k.admin.segment, title: k.ui.title, one: k.ui.one }) as Kind);

/** The screen shown when none is named: the first kind's list. */
export const FIRST_ROUTE: string = KINDS[0]!.route;

export const kindOf = (route: string) => KINDS.find((k) => k.route === route);

/** Whether MLflow numbers it (an experiment): lists show the number, a page asks MLflow for its name. */
export const numbered = (k: Kind): boolean => !idIsName(k.kind);

/** Whether it is a prompt: to MLflow a registered model, told apart by its tag. */
export const isPrompt = (k: Kind): boolean => SPECS[k.kind].stored.prompt;

/** The grant JSON's field naming the resource (`experiment_id`, `name`). */
export const grantIdField = (k: Kind): GrantIdField => SPECS[k.kind].admin.param;

/** MLflow's call that gets one by its id (the registry's look-up), or none for a kind MLflow finds by name only in its list. */
export const lookupOf = (k: Kind): { readonly path: string; readonly param: string } | undefined => {
  const lookup = SPECS[k.kind].lookup;
  return 'param' in lookup ? lookup : undefined;
};

/** Whether it is a Skill (MLflow's Skill Registry): MLflow names one by `<name>` or `@<organization>/<name>` in its paths. */
export const isSkill = (k: Kind): boolean => SPECS[k.kind].stored.as === 'skill';

/** Whether it is an MCP server (MLflow's MCP server registry): named `<namespace>/<slug>`, two segments of its paths. */
export const isMcpServer = (k: Kind): boolean => SPECS[k.kind].stored.as === 'mcp_server';

/** Whether it is an MLflow workspace (its grants are membership): MLflow lists them whole, and only its administrators create one. */
export const isWorkspace = (k: Kind): boolean => SPECS[k.kind].stored.as === 'workspace';

/** Whether it is a scorer (a judge): `<experiment_id>/<name>`, registered by MLflow's clients with its definition. */
export const isScorer = (k: Kind): boolean => SPECS[k.kind].stored.as === 'scorer';

/** Whether it is one of the AI gateway's kinds: MLflow lists them whole (no paging), and creating one takes secret values. */
export const isGateway = (k: Kind): k is GatewayShown => isGatewayKind(k.kind);

/** A gateway kind, as the screens show it. */
export type GatewayShown = Kind & { readonly kind: GatewayKind };

/** Whether the screens create one (team setup): not a gateway kind, which MLflow's own AI Gateway page creates. */
export const creatable = (k: Kind): boolean => !isGateway(k) && !isScorer(k) && !isWorkspace(k);

/** The permissions a grant on it may give (USE only on the gateway's kinds), for the screens' selects. */
export const permissionsFor = (kind: ResourceKind): readonly Permission[] => permissionsOf(kind);

/** How MLflow lists a gateway kind, and its call that gets one by its generated id (for a kind not got by name). */
export const listingOf = (k: GatewayShown) => ({ ...gatewayListing(k.kind), get: SPECS[k.kind].generatedId.path });

/** The word for one resource of a kind the server names (`registered model`). */
export const kindLabel = (kind: string): string => KINDS.find((k) => k.kind === kind)?.one ?? kind;

/** A resource as a sentence names it: an experiment by its number, a model or prompt by its quoted name. */
export const resourceText = (kind: string, id: string): string =>
  isResourceKind(kind) && !idIsName(kind) ? `${kindLabel(kind)} ${id}` : `${kindLabel(kind)} “${id}”`;
