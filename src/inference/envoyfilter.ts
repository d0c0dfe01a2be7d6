import { parseAllDocuments } from 'yaml';
import { digestKey } from './api-key.js';
import { keyFileSchema, keyValue, type KeyFile } from './key-file.js';

/**
 * Migration from the Istio setup: an EnvoyFilter (`api-key-filter` in `istio-system`) whose Lua
 * filter on the ingress gateway compares `x-api-key` with a plain-text `api_key`. Pure: YAML text
 * in, flowgate key file out. Messages name resources and fields, never the key.
 */

export class EnvoyFilterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvoyFilterError';
  }
}

export interface ConvertOptions {
  /** Id of the key in flowgate's file; default `envoyfilter-<filter name>`. */
  id?: string;
  /** Limit the key to these route names; default every route, as the gateway filter did. */
  routes?: readonly string[];
  /** Store only the SHA-256 of the key, so the new Secret no longer holds it in plain text. */
  hashOnly?: boolean;
  /** Which EnvoyFilter to read when the input holds several; default `api-key-filter`. */
  filterName?: string;
}

export interface ConvertResult {
  readonly keyFile: KeyFile;
  readonly source: { readonly name: string; readonly namespace: string | undefined };
  readonly warnings: readonly string[];
}

const DEFAULT_FILTER = 'api-key-filter';
const RECOMMENDED_KEY_LENGTH = 32;

export function convertEnvoyFilter(yamlText: string, options: ConvertOptions = {}): ConvertResult {
  const filter = pickFilter(readResources(yamlText), options.filterName ?? DEFAULT_FILTER);
  const name = String(filter.metadata?.name ?? DEFAULT_FILTER);
  const namespace = typeof filter.metadata?.namespace === 'string' ? filter.metadata.namespace : undefined;
  const scripts = luaScripts(filter);
  if (scripts.length === 0)
    throw new EnvoyFilterError(`EnvoyFilter ${name} has no Lua filter with inline code (looked for typed_config.inline_code / inlineCode / default_source_code.inline_string in spec.configPatches[].patch.value)`);

  const keys = new Set<string>();
  for (const script of scripts) for (const key of keysInLua(script)) keys.add(key);
  if (keys.size === 0)
    throw new EnvoyFilterError(`EnvoyFilter ${name}: the Lua code assigns no string literal to api_key and compares x-api-key with no literal; nothing to convert`);
  if (keys.size > 1)
    throw new EnvoyFilterError(`EnvoyFilter ${name}: the Lua code holds ${keys.size} different keys; convert by hand so each gets its own id`);
  const key = [...keys][0]!;
  if (!keyValue.safeParse(key).success)
    throw new EnvoyFilterError(`EnvoyFilter ${name}: its key is not 8 to 1024 visible ASCII characters without spaces or commas, which flowgate requires; issue a new key instead`);

  const warnings: string[] = [];
  if (namespace !== undefined && namespace !== 'istio-system') warnings.push(`EnvoyFilter ${name} is in namespace ${namespace}, not istio-system`);
  if (key.length < RECOMMENDED_KEY_LENGTH)
    warnings.push(`the key is ${key.length} characters long; rotate to a random key of at least ${RECOMMENDED_KEY_LENGTH} characters after the migration`);

  const entry = {
    id: options.id ?? `envoyfilter-${name}`.slice(0, 64),
    ...(options.hashOnly ? { sha256: digestKey(key).toString('hex') } : { value: key }),
    ...(options.routes?.length ? { routes: [...options.routes] } : {}),
  };
  const checked = keyFileSchema.safeParse({ keys: [entry] });
  if (!checked.success)
    throw new EnvoyFilterError(checked.error.issues.map((i) => `${i.path.slice(2).join('.') || 'key'}: ${i.message}`).join('; '));
  return { keyFile: checked.data, source: { name, namespace }, warnings };
}

interface Resource {
  kind?: unknown;
  metadata?: { name?: unknown; namespace?: unknown };
  spec?: unknown;
  items?: unknown;
}

/** Every resource in the text: several YAML documents, and `kind: List` as kubectl prints it. */
function readResources(yamlText: string): Resource[] {
  const docs = parseAllDocuments(yamlText);
  if (!Array.isArray(docs)) throw new EnvoyFilterError('the input is not YAML');
  const out: Resource[] = [];
  for (const doc of docs) {
    if (doc.errors.length) {
      const pos = doc.errors[0]!.linePos?.[0];
      throw new EnvoyFilterError(`the input is not valid YAML${pos ? ` (line ${pos.line}, column ${pos.col})` : ''}`);
    }
    const value = doc.toJS() as unknown;
    if (!isObject(value)) continue;
    const resource = value as Resource;
    if (Array.isArray(resource.items)) out.push(...resource.items.filter(isObject).map((i) => i as Resource));
    else out.push(resource);
  }
  return out;
}

function pickFilter(resources: Resource[], wanted: string): Resource {
  const filters = resources.filter((r) => r.kind === 'EnvoyFilter');
  if (filters.length === 0) throw new EnvoyFilterError('the input holds no resource of kind EnvoyFilter');
  const named = filters.find((f) => f.metadata?.name === wanted);
  if (named) return named;
  if (filters.length === 1) return filters[0]!;
  const names = filters.map((f) => String(f.metadata?.name ?? '(unnamed)')).join(', ');
  throw new EnvoyFilterError(`the input holds several EnvoyFilters (${names}) and none is named ${wanted}`);
}

/** The inline Lua of every patch, in the field spellings Istio and Envoy accept. */
function luaScripts(filter: Resource): string[] {
  const spec = filter.spec as { configPatches?: unknown; config_patches?: unknown } | undefined;
  const patches = spec?.configPatches ?? spec?.config_patches;
  if (!Array.isArray(patches)) throw new EnvoyFilterError('the EnvoyFilter has no spec.configPatches list');
  const scripts: string[] = [];
  for (const patch of patches) {
    const value = (patch as { patch?: { value?: unknown } })?.patch?.value as Record<string, unknown> | undefined;
    const config = (value?.typed_config ?? value?.typedConfig ?? value?.config) as Record<string, unknown> | undefined;
    if (!isObject(config)) continue;
    const sources = [
      config.inline_code,
      config.inlineCode,
      (config.default_source_code as Record<string, unknown> | undefined)?.inline_string,
      (config.defaultSourceCode as Record<string, unknown> | undefined)?.inlineString,
    ];
    for (const s of sources) if (typeof s === 'string' && s.trim()) scripts.push(s);
  }
  return scripts;
}

const LUA_STRING = String.raw`(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|\[(=*)\[([\s\S]*?)\]\3\])`;
/** `api_key = "…"`, with or without `local`; `==` does not match because a quote must follow. */
const API_KEY_ASSIGNMENT = new RegExp(String.raw`\bapi_key\s*=\s*` + LUA_STRING, 'g');
/** `headers:get("x-api-key") ~= "…"` when the literal is compared directly. */
const HEADER_COMPARISON = new RegExp(String.raw`["']x-api-key["']\s*\)\s*[~=]=\s*` + LUA_STRING, 'gi');

function keysInLua(code: string): string[] {
  const keys: string[] = [];
  for (const pattern of [API_KEY_ASSIGNMENT, HEADER_COMPARISON]) {
    for (const m of code.matchAll(pattern)) {
      const long = m[4];
      keys.push(long !== undefined ? long : unescapeLua(m[1] ?? m[2] ?? ''));
    }
  }
  return keys;
}

function unescapeLua(s: string): string {
  return s.replace(/\\(.)/g, (_all, c: string) => {
    if (c === '\\' || c === '"' || c === "'") return c;
    throw new EnvoyFilterError('the key literal uses a Lua escape sequence flowgate does not convert; copy the key by hand');
  });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
