import { badRequest } from '../errors.js';

/*
 * What a prompt-optimization job's worker will load, read from the request the way the worker reads it.
 * The worker runs with no caller identity, so each input is checked here; a value that could be read two
 * ways is refused rather than checked under one reading while the worker takes the other.
 */

/** MLflow's rule for prompt names (and aliases): letters, digits, `-`, `_` and `.`. */
const NAME = '[A-Za-z0-9_.-]+';
const PROMPT_URI = new RegExp(`^prompts:/(${NAME})(?:/(\\d+)|@(${NAME}))$`);
const BARE_NAME = new RegExp(`^${NAME}$`);

/**
 * The prompt `source_prompt_uri` names: `prompts:/<name>/<version>`, `prompts:/<name>@<alias>`, or a
 * bare name. Anything else (another scheme or spelling, a host, a query, `@` in a bare name, which MLflow
 * reads two ways) is a 400.
 */
export function sourcePromptName(uri: string): string {
  const parsed = PROMPT_URI.exec(uri);
  if (parsed) return parsed[1]!;
  if (BARE_NAME.test(uri)) return uri;
  throw badRequest(
    "Invalid value for parameter 'source_prompt_uri': name the prompt as prompts:/<name>/<version>, prompts:/<name>@<alias> or <name>",
  );
}

/**
 * The AI-gateway endpoint a model URI names (`gateway:/<endpoint>`), or undefined for another provider
 * (MLflow's server credentials, as MLflow allows). MLflow compares the provider as written; another
 * spelling of `gateway` is a 400, so flowgate and the worker cannot read it differently.
 */
function endpointOfModel(model: string, where: string): string | undefined {
  const split = model.indexOf(':/');
  const provider = split < 0 ? model : model.slice(0, split);
  if (provider.trim().toLowerCase() === 'gateway' && provider !== 'gateway') throw badRequest(`Invalid model in ${where}: write the provider as 'gateway'`);
  if (provider !== 'gateway') return undefined;
  const endpoint = model.slice(split + 2).replace(/^\/+/, '');
  if (endpoint === '') throw badRequest(`Invalid model in ${where}: no endpoint after 'gateway:/'`);
  return endpoint;
}

function parsedJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest(`Invalid value for parameter '${where}': not JSON`);
  }
}

/**
 * The AI-gateway endpoint the optimizer's reflection model calls: `reflection_model` in the config. A
 * config that is not a JSON object is a 400: MLflow's check would pass it unread.
 */
export function reflectionEndpoint(optimizerConfigJson: string): string | undefined {
  const where = 'config.optimizer_config_json';
  const config = parsedJson(optimizerConfigJson, where);
  if (typeof config !== 'object' || config === null || Array.isArray(config)) throw badRequest(`Invalid value for parameter '${where}': not a JSON object`);
  const model = (config as Record<string, unknown>).reflection_model;
  if (model === undefined || model === null) return undefined;
  if (typeof model !== 'string') throw badRequest(`Invalid value for 'reflection_model' in '${where}': not a string`);
  return endpointOfModel(model, where);
}

/**
 * The AI-gateway endpoints a serialized scorer's judges call: every `model` in it, at any depth (an
 * instructions judge's, a built-in judge's, each member of an ensemble). The job worker calls them
 * from MLflow's own process, which flowgate never sees, so the request that hands them over is where
 * USE on each is checked.
 */
export function judgeEndpoints(serializedScorer: string, field: string): string[] {
  const found = new Set<string>();
  const walk = (node: unknown, depth: number): void => {
    if (depth > 32) throw badRequest(`Invalid value for parameter '${field}': nested too deeply`);
    if (Array.isArray(node)) return node.forEach((item) => walk(item, depth + 1));
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'model' && typeof value === 'string') {
        const endpoint = endpointOfModel(value, field);
        if (endpoint !== undefined) found.add(endpoint);
      } else walk(value, depth + 1);
    }
  };
  walk(parsedJson(serializedScorer, field), 0);
  return [...found];
}

/**
 * The traces a serialized scorer's MemAlign judges recall (`episodic_trace_ids`, at any depth: a judge
 * inside an ensemble, or aligned on top of another). The job worker loads each by id (`mlflow.get_trace`)
 * from MLflow's own process and puts its inputs, outputs and feedback into the prompt its judge's model
 * gets, so the request that hands the judge over is where READ on each trace is checked. Anything but a
 * list of strings there is a 400: MLflow would read it some other way (a string, one id per character).
 */
export function judgeTraceIds(serializedScorer: string, field: string): string[] {
  const found = new Set<string>();
  const walk = (node: unknown, depth: number): void => {
    if (depth > 32) throw badRequest(`Invalid value for parameter '${field}': nested too deeply`);
    if (Array.isArray(node)) return node.forEach((item) => walk(item, depth + 1));
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key !== 'episodic_trace_ids') walk(value, depth + 1);
      else if (value === null) continue;
      else if (!Array.isArray(value) || !value.every((id) => typeof id === 'string' && id !== ''))
        throw badRequest(`Invalid value for 'episodic_trace_ids' in '${field}': a list of trace ids`);
      else for (const id of value as string[]) found.add(id);
    }
  };
  walk(parsedJson(serializedScorer, field), 0);
  return [...found];
}
