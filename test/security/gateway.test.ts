import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { caller, ok, type Caller, type Exchange, type Reply } from './harness/http.js';
import { randomHex, V2 } from './harness/world.js';

/*
 * Issue 35, the AI gateway, against the real MLflow (pinned) with a fake provider on loopback. alice
 * keeps provider keys, model definitions and endpoints; mallory has her own, a few of alice's she was
 * given (READ on one endpoint and one model definition, EDIT on another endpoint through a group), a
 * grant on a name no endpoint has, and a MANAGE name pattern. Each attack is sent through flowgate as
 * mallory; where MLflow would act on it, the same request is first sent to MLflow itself (the control)
 * and must land there (the provider is called, MLflow resolves the endpoint, or the change is made), so
 * an attack refused for an unrelated reason cannot pass as held. A bypass is a provider call, a change
 * to alice's objects, a name or id of hers in an answer, or a secret value anywhere.
 */
const tag = randomHex(3);
const GW = '/api/3.0/mlflow/gateway';
const AJAX_GW = '/ajax-api/3.0/mlflow/gateway';
const SECRETS = { alice: `sk-alice-${randomHex(12)}`, mallory: `sk-mallory-${randomHex(12)}` };

/** alice's objects carry `vic-<tag>` in their names: a mallory answer containing it leaked one. */
const VIC = `vic-${tag}`;
const N = {
  aKey: `${VIC}-key`,
  aAntKey: `${VIC}-ant-key`,
  aDef: `${VIC}-def`,
  aDef2: `${VIC}-def2`,
  aAntDef: `${VIC}-ant-def`,
  aChat: `${VIC}-chat`,
  aAnt: `${VIC}-ant`,
  aRead: `${VIC}-read`,
  aShared: `${VIC}-shared`,
  aTrap: `${VIC}-trap`,
  aTrap2: `${VIC}-trap2`,
  mKey: `mal-${tag}-key`,
  mDef: `mal-${tag}-def`,
  mChat: `mal-${tag}-chat`,
  ghost: `ghost-${tag}`,
  minePattern: `mine-${tag}-*`,
};
const ids = { aKey: '', aAntKey: '', aDef: '', aDef2: '', aAntDef: '', aChat: '', aAnt: '', aProxy: '', aRead: '', aShared: '', aliceExp: '', mKey: '', mDef: '', mChat: '', mMlflow: '', mExp: '' };
/** The experiments `gateway/<name>` alice keeps, by endpoint name. */
const traps: Record<string, string> = {};

let mlflow: MlflowServer;
let provider: Provider;
let fg: TestFlowgate;
const exchanges: Exchange[] = [];
const keep = (e: Exchange) => exchanges.push(e);
let admin: Caller;
let alice: Caller;
let mallory: Caller;
let direct: Caller;

const chatBody = (model?: unknown) => ({ ...(model === undefined ? {} : { model }), messages: [{ role: 'user', content: 'ping' }] });
const providerCalls = () => provider.seen.length;
const MESSAGES = [{ role: 'user', content: 'ping' }];

/** Everything MLflow has of alice's gateway objects (straight from MLflow): must not change under attack. */
async function aliceObjects(): Promise<string> {
  const lists = await Promise.all(['secrets', 'model-definitions', 'endpoints'].map((what) => direct('GET', `${GW}/${what}/list`)));
  const rows = lists.flatMap((r) => Object.values(r.json as Record<string, Array<Record<string, unknown>>>).flat());
  const mine = rows.filter((row) => JSON.stringify(row).includes(VIC) && row.name !== N.aShared && row.endpoint_id !== ids.aShared);
  const withTags = await Promise.all(
    mine.map(async (row) => {
      if (typeof row.endpoint_id !== 'string') return row;
      const bindings = await direct('GET', `${GW}/endpoints/bindings/list`, { query: { endpoint_id: row.endpoint_id } });
      return { ...row, bindings: bindings.json };
    }),
  );
  return JSON.stringify(withTags.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));
}
let aliceBefore: string;

let malloryToken = '';
async function user(name: string): Promise<Caller> {
  ok(await admin('POST', `${V2}/users/create`, { body: { username: name } }), `create ${name}`);
  const token = ok(await admin('PATCH', `${V2}/permissions/users/access-token`, { body: { username: name } }), 'token').token as string;
  if (name === 'mallory') malloryToken = token;
  return caller(fg.url, basic(name, token), keep);
}

const grant = async (grantee: string, segment: string, name: string, permission: string) =>
  ok(await admin('POST', `${V2}/permissions/${grantee}/gateways/${segment}/${encodeURIComponent(name)}`, { body: { permission } }), `grant ${grantee} ${permission} on ${name}`);

async function secret(as: Caller, name: string, value: string, providerName = 'openai'): Promise<string> {
  const body = { secret_name: name, secret_value: { api_key: value }, provider: providerName, auth_config: { api_base: `${provider.url}/v1` } };
  return ok(await as('POST', `${GW}/secrets/create`, { body }), `secret ${name}`).secret.secret_id as string;
}
async function definition(as: Caller, name: string, secretId: string, providerName = 'openai'): Promise<string> {
  const body = { name, secret_id: secretId, provider: providerName, model_name: `${name}-model` };
  return ok(await as('POST', `${GW}/model-definitions/create`, { body }), `definition ${name}`).model_definition.model_definition_id as string;
}
const routed = (...definitions: string[]) => definitions.map((d) => ({ model_definition_id: d, linkage_type: 'PRIMARY', weight: 1 }));
async function endpoint(as: Caller, name: string, ...definitions: string[]): Promise<string> {
  return ok(await as('POST', `${GW}/endpoints/create`, { body: { name, model_configs: routed(...definitions) } }), `endpoint ${name}`).endpoint.endpoint_id as string;
}

interface Provider {
  readonly url: string;
  /** Every request the provider received. */
  readonly seen: string[];
  /** A streamed answer holds its last chunk until this is called. */
  release(): void;
  close(): Promise<void>;
}

/**
 * An OpenAI-compatible provider on loopback: a chat completion for any request, or with `stream`, an
 * event stream whose first chunk goes out at once and whose rest waits for `release()`.
 */
async function startProvider(): Promise<Provider> {
  const seen: string[] = [];
  let waiting: Array<() => void> = [];
  const chunk = (content: string | null, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }] })}\n\n`;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${body}`);
      const json = (() => {
        try {
          return JSON.parse(body || '{}') as { model?: string; stream?: boolean };
        } catch {
          return {};
        }
      })();
      if (json.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk('first', null));
        waiting.push(() => res.end(`${chunk('last', null)}${chunk(null, 'stop')}data: [DONE]\n\n`));
        return;
      }
      const answer = JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: json.model ?? 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'pong' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    release() {
      const all = waiting;
      waiting = [];
      for (const finish of all) finish();
    },
    close: () =>
      new Promise<void>((resolve) => {
        provider.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  provider = await startProvider();
  mlflow = await startMlflowServer({ env: { MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES: 'http,https', MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS: 'true' } });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  admin = caller(fg.url, adminAuth(), keep);
  direct = caller(mlflow.url, undefined, keep);
  alice = await user('alice');
  mallory = await user('mallory');

  ids.aKey = await secret(alice, N.aKey, SECRETS.alice);
  ids.aAntKey = await secret(alice, N.aAntKey, SECRETS.alice, 'anthropic');
  ids.aDef = await definition(alice, N.aDef, ids.aKey);
  ids.aDef2 = await definition(alice, N.aDef2, ids.aKey);
  ids.aAntDef = await definition(alice, N.aAntDef, ids.aAntKey, 'anthropic');
  ids.aChat = await endpoint(alice, N.aChat, ids.aDef);
  ids.aAnt = await endpoint(alice, N.aAnt, ids.aAntDef);
  ids.aProxy = await endpoint(alice, 'proxy', ids.aDef);
  ids.aRead = await endpoint(alice, N.aRead, ids.aDef);
  ids.aShared = await endpoint(alice, N.aShared, ids.aDef);
  // Experiments alice keeps whose names an endpoint's usage experiment would take (only an administrator makes one).
  for (const name of [N.aTrap, N.aTrap2]) {
    traps[name] = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `gateway/${name}` } }), 'trap').experiment_id as string;
    ok(await admin('POST', `${V2}/permissions/users/alice/experiments/${traps[name]}`, { body: { permission: 'MANAGE' } }), 'trap is alice\'s');
  }
  ids.aliceExp = ok(await alice('POST', `${V2}/experiments/create`, { body: { name: `${VIC}-exp` } }), 'experiment').experiment_id as string;

  ids.mKey = await secret(mallory, N.mKey, SECRETS.mallory);
  ids.mDef = await definition(mallory, N.mDef, ids.mKey);
  ids.mChat = await endpoint(mallory, N.mChat, ids.mDef);
  ids.mMlflow = await endpoint(mallory, 'mlflow', ids.mDef);

  await grant('users/mallory', 'endpoints', N.aRead, 'READ');
  await grant('users/mallory', 'model-definitions', N.aDef2, 'READ');
  await grant('users/mallory', 'endpoints', N.ghost, 'MANAGE');
  // A group is made by its first grant.
  await grant(`groups/editors-${tag}`, 'endpoints', N.aShared, 'EDIT');
  ok(await admin('POST', `${V2}/permissions/groups/editors-${tag}/users`, { body: { username: 'mallory' } }), 'group');
  ok(
    await admin('POST', `${V2}/permissions/users/mallory/patterns`, { body: { resource_type: 'gateway_endpoint', pattern: N.minePattern, permission: 'MANAGE' } }),
    'pattern',
  );
  aliceBefore = await aliceObjects();
}, 300_000);

afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await mlflow?.stop();
  await provider?.close();
});

/** A refusal of flowgate's own (MLflow's error JSON), not MLflow's. */
function refused(reply: Reply, status = 403): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.json?.error_code, reply.text).toBe(status === 403 ? 'PERMISSION_DENIED' : 'INVALID_PARAMETER_VALUE');
}
function noLeak(reply: Reply): void {
  expect(reply.text).not.toContain(VIC);
  for (const id of [ids.aKey, ids.aDef, ids.aDef2, ids.aChat, ids.aRead]) expect(reply.text).not.toContain(id);
}

interface Invocation {
  readonly label: string;
  readonly path: string;
  readonly body: unknown;
  /** How the control shows MLflow acted on alice's endpoint: the provider was called, or MLflow resolved the endpoint and answered about its provider. */
  readonly lands: 'provider' | RegExp;
}

describe('invoking an endpoint mallory may not use', () => {
  const INVOCATIONS: readonly Invocation[] = [
    { label: 'by its URL', path: `/gateway/${N.aChat}/mlflow/invocations`, body: chatBody(), lands: 'provider' },
    { label: 'MLflow chat completions', path: '/gateway/mlflow/v1/chat/completions', body: chatBody(N.aChat), lands: 'provider' },
    { label: 'OpenAI chat completions', path: '/gateway/openai/v1/chat/completions', body: chatBody(N.aChat), lands: 'provider' },
    { label: 'OpenAI embeddings', path: '/gateway/openai/v1/embeddings', body: { model: N.aChat, input: 'x' }, lands: 'provider' },
    { label: 'OpenAI responses', path: '/gateway/openai/v1/responses', body: { model: N.aChat, input: 'x' }, lands: 'provider' },
    { label: 'OpenAI responses/compact', path: '/gateway/openai/v1/responses/compact', body: { model: N.aChat, input: 'x' }, lands: 'provider' },
    { label: 'Anthropic messages', path: '/gateway/anthropic/v1/messages', body: { model: N.aAnt, max_tokens: 5, messages: MESSAGES }, lands: 'provider' },
    { label: 'TypeSafe System One', path: '/gateway/typesafe/v1/systemone', body: { model: N.aChat, state: {}, questions: [] }, lands: /System One model/ },
    { label: 'Gemini generateContent', path: `/gateway/gemini/v1beta/models/${N.aChat}:generateContent`, body: { contents: [] }, lands: /OpenAI provider/ },
    { label: 'Gemini streamGenerateContent', path: `/gateway/gemini/v1beta/models/${N.aChat}:streamGenerateContent`, body: { contents: [] }, lands: /OpenAI provider/ },
    { label: 'the raw proxy', path: `/gateway/proxy/${N.aChat}/chat/completions`, body: { model: 'gpt', messages: MESSAGES }, lands: 'provider' },
    // MLflow's router reads this as the invocation of the endpoint `proxy` (alice's), not a proxy call to `mlflow` (mallory's).
    { label: "proxy/mlflow/invocations (alice's endpoint 'proxy', not mallory's 'mlflow')", path: '/gateway/proxy/mlflow/invocations', body: chatBody(), lands: 'provider' },
  ];

  it.each(INVOCATIONS.map((i) => [i.label, i] as const))('%s: refused, the provider never called', async (_, inv) => {
    const before = providerCalls();
    const control = await direct('POST', inv.path, { body: inv.body });
    if (inv.lands === 'provider') expect(providerCalls(), `control: ${control.text}`).toBeGreaterThan(before);
    else expect(control.text).toMatch(inv.lands);
    const calls = providerCalls();
    const reply = await mallory('POST', inv.path, { body: inv.body });
    refused(reply);
    noLeak(reply);
    expect(providerCalls()).toBe(calls);
  });

  it('the same routes with her own endpoint reach the provider (the positive control)', async () => {
    const before = providerCalls();
    for (const r of [
      await mallory('POST', `/gateway/${N.mChat}/mlflow/invocations`, { body: chatBody() }),
      await mallory('POST', '/gateway/mlflow/v1/chat/completions', { body: chatBody(N.mChat) }),
      await mallory('POST', '/gateway/proxy/mlflow/chat/completions', { body: { model: 'gpt', messages: MESSAGES } }),
    ])
      expect(r.status, r.text).toBe(200);
    expect(providerCalls()).toBe(before + 3);
  });
});

describe("the body's model, spelled every way", () => {
  const raw = (text: string) => ({ raw: text, headers: { 'content-type': 'application/json' } });
  const CHAT = '/gateway/mlflow/v1/chat/completions';

  it.each([
    ['no model', chatBody()],
    ['an empty model', chatBody('')],
    ['a list of names', chatBody([N.aChat])],
    ['a list with her own name first', chatBody([N.mChat, N.aChat])],
    ['an object', chatBody({ name: N.aChat })],
    ['a number', chatBody(42)],
    ['null', chatBody(null)],
  ] as const)('%s: 400 from flowgate before MLflow sees it', async (_, body) => {
    const calls = providerCalls();
    const reply = await mallory('POST', CHAT, { body });
    refused(reply, 400);
    expect(providerCalls()).toBe(calls);
  });

  it.each([
    ['upper case', N.aChat.toUpperCase()],
    ['a leading blank', ` ${N.aChat}`],
    ['a trailing blank', `${N.aChat} `],
    ['a trailing tab', `${N.aChat}\t`],
  ])('%s: decided on that spelling (no grant), never on the endpoint', async (_, model) => {
    const calls = providerCalls();
    refused(await mallory('POST', CHAT, { body: chatBody(model) }));
    expect(providerCalls()).toBe(calls);
  });

  it('a repeated key: decided on the last, as MLflow reads it', async () => {
    const calls = providerCalls();
    refused(await mallory('POST', CHAT, raw(`{"model": "${N.mChat}", "model": "${N.aChat}", "messages": [{"role": "user", "content": "x"}]}`)));
    expect(providerCalls()).toBe(calls);
  });

  it('a double-encoded body: decided on the name inside it', async () => {
    const calls = providerCalls();
    refused(await mallory('POST', CHAT, { body: JSON.stringify(chatBody(N.aChat)) }));
    expect(providerCalls()).toBe(calls);
  });

  it('a body that is not JSON MLflow and flowgate read alike (a byte-order mark, UTF-16): 400', async () => {
    const text = JSON.stringify(chatBody(N.aChat));
    for (const bytes of [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), Buffer.from(text, 'utf16le')]) {
      const calls = providerCalls();
      refused(await mallory('POST', CHAT, { raw: bytes, headers: { 'content-type': 'application/json' } }), 400);
      expect(providerCalls()).toBe(calls);
    }
  });
});

describe('endpoint names in the path, encoded', () => {
  it.each([
    ['invocations', `/gateway/${N.mChat}%2F..%2F${N.aChat}/mlflow/invocations`, chatBody()],
    ['the raw proxy', `/gateway/proxy/${N.mChat}%2F..%2F${N.aChat}/chat/completions`, { model: 'gpt', messages: MESSAGES }],
    ['a backslash', `/gateway/${N.mChat}%5C..%5C${N.aChat}/mlflow/invocations`, chatBody()],
    ['Gemini', `/gateway/gemini/v1beta/models/${N.mChat}%2F..%2F${N.aChat}:generateContent`, { contents: [] }],
    ['Gemini, a colon before the action', `/gateway/gemini/v1beta/models/${N.aChat}:x:generateContent`, { contents: [] }],
  ])('%s: decided on the endpoint the path names once decoded', async (_, path, body) => {
    const calls = providerCalls();
    const reply = await mallory('POST', path, { body, verbatim: true });
    expect([400, 403]).toContain(reply.status);
    expect(reply.json?.error_code).toMatch(/PERMISSION_DENIED|INVALID_PARAMETER_VALUE/);
    expect(providerCalls()).toBe(calls);
  });

  it('a double-encoded slash is refused (400)', async () => {
    refused(await mallory('POST', `/gateway/${N.mChat}%252F..%252F${N.aChat}/mlflow/invocations`, { body: chatBody(), verbatim: true }), 400);
  });

  it('Gemini: anything but models/<endpoint>:generateContent or :streamGenerateContent is refused (400)', async () => {
    refused(await mallory('POST', `/gateway/gemini/v1beta/models/${N.mChat}:countTokens`, { body: { contents: [] } }), 400);
  });
});

describe("alice's objects by their ids, in the query and the body", () => {
  /** [label, method, path, options, control change that lands straight on MLflow] */
  const CHANGES = (): ReadonlyArray<readonly [string, string, string, Parameters<Caller>[2]]> => [
    ['delete the endpoint (query)', 'DELETE', `${GW}/endpoints/delete`, { query: { endpoint_id: ids.aChat } }],
    ['delete the endpoint (body)', 'DELETE', `${GW}/endpoints/delete`, { body: { endpoint_id: ids.aChat } }],
    ['delete the endpoint (lowerCamelCase)', 'DELETE', `${AJAX_GW}/endpoints/delete`, { body: { endpointId: ids.aChat } }],
    ['rename the endpoint', 'POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.aChat, name: `${N.aChat}-x` } }],
    ['rename it, her id in the query and alice\'s in the body', 'POST', `${GW}/endpoints/update`, { query: { endpoint_id: ids.mChat }, body: { endpoint_id: ids.aChat, name: `${N.aChat}-x` } }],
    ['rename it, both spellings', 'POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.mChat, endpointId: ids.aChat, name: `${N.aChat}-x` } }],
    ['tag the endpoint', 'POST', `${GW}/endpoints/set-tag`, { body: { endpoint_id: ids.aChat, key: 'k', value: 'v' } }],
    ['detach its model definition', 'POST', `${GW}/endpoints/models/detach`, { body: { endpoint_id: ids.aChat, model_definition_id: ids.aDef } }],
    ['bind it to a scorer', 'POST', `${GW}/endpoints/bindings/create`, { body: { endpoint_id: ids.aChat, resource_type: 'scorer', resource_id: 'sc-1' } }],
    ["reroute it to her definition", 'POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.aChat, model_configs: routed(ids.mDef) } }],
    ['replace the secret value', 'POST', `${GW}/secrets/update`, { body: { secret_id: ids.aKey, secret_value: { api_key: 'sk-mallory' } } }],
    ['point the secret elsewhere', 'POST', `${GW}/secrets/update`, { body: { secret_id: ids.aKey, auth_config: { api_base: 'http://127.0.0.1:9/v1' } } }],
    ['delete the secret', 'DELETE', `${GW}/secrets/delete`, { query: { secret_id: ids.aKey } }],
    ['rename the model definition', 'POST', `${GW}/model-definitions/update`, { body: { model_definition_id: ids.aDef, name: `${N.aDef}-x` } }],
    ['move the model definition onto her secret', 'POST', `${GW}/model-definitions/update`, { body: { model_definition_id: ids.aDef, secret_id: ids.mKey } }],
    ['delete the readable model definition', 'DELETE', `${GW}/model-definitions/delete`, { body: { model_definition_id: ids.aDef2 } }],
    ['rename the endpoint she may read', 'POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.aRead, name: `${N.aRead}-x` } }],
  ];

  it('each change is refused (403, or 400 for conflicting copies), and alice\'s objects are unchanged', async () => {
    for (const [label, method, path, options] of CHANGES()) {
      const reply = await mallory(method, path, options);
      expect([400, 403], `${label}: ${reply.text}`).toContain(reply.status);
      noLeak(reply);
    }
    expect(await aliceObjects()).toBe(aliceBefore);
  });

  it('reads by id or name are refused, and a conflicting copy is 400', async () => {
    for (const [path, query] of [
      [`${GW}/endpoints/get`, { endpoint_id: ids.aChat }],
      [`${GW}/endpoints/get`, { name: N.aChat }],
      [`${AJAX_GW}/endpoints/get`, { name: 'proxy' }],
      [`${GW}/secrets/get`, { secret_id: ids.aKey }],
      [`${GW}/model-definitions/get`, { model_definition_id: ids.aDef }],
      [`${GW}/endpoints/bindings/list`, { endpoint_id: ids.aChat }],
      // Listing the definitions built on alice's secret would tell which use it.
      [`${GW}/model-definitions/list`, { secret_id: ids.aKey }],
    ] as const) {
      const reply = await mallory('GET', path, { query });
      refused(reply);
      noLeak(reply);
    }
    refused(await mallory('GET', `${GW}/endpoints/get`, { query: { endpoint_id: ids.mChat, name: N.aChat } }), 400);
  });

  it('an id MLflow does not have is refused exactly as a hidden one (ids are no oracle), in explain too', async () => {
    const gone = { endpoint: `e-${randomHex(16)}`, secret: `s-${randomHex(16)}`, definition: `d-${randomHex(16)}` };
    for (const [path, field, hidden, missing] of [
      [`${GW}/endpoints/get`, 'endpoint_id', ids.aChat, gone.endpoint],
      [`${GW}/secrets/get`, 'secret_id', ids.aKey, gone.secret],
      [`${GW}/model-definitions/get`, 'model_definition_id', ids.aDef, gone.definition],
    ] as const) {
      const a = await mallory('GET', path, { query: { [field]: hidden } });
      const b = await mallory('GET', path, { query: { [field]: missing } });
      expect(a.status).toBe(403);
      expect(b.status).toBe(a.status);
      expect(b.text).toBe(a.text);
      const explain = (id: string) => mallory('GET', `${V2}/permissions/explain`, { query: { method: 'GET', path: `${path}?${field}=${id}` } });
      const [x, y] = [await explain(hidden), await explain(missing)];
      expect(x.status).toBe(200);
      expect(x.json.verdict.reason).toBe('not-readable');
      expect(y.text).toBe(x.text);
      noLeak(x);
    }
    const a = await mallory('DELETE', `${GW}/endpoints/delete`, { body: { endpoint_id: ids.aChat } });
    const b = await mallory('DELETE', `${GW}/endpoints/delete`, { body: { endpoint_id: gone.endpoint } });
    expect(b.text).toBe(a.text);
  });
});

describe('building on what mallory may not use', () => {
  const ATTEMPTS = (): ReadonlyArray<readonly [string, string, unknown]> => [
    ["attach alice's model definition to her endpoint", 'endpoints/models/attach', { endpoint_id: ids.mChat, model_config: { model_definition_id: ids.aDef, linkage_type: 'FALLBACK', weight: 1 } }],
    ['the same, lowerCamelCase', 'endpoints/models/attach', { endpointId: ids.mChat, modelConfig: { modelDefinitionId: ids.aDef, linkageType: 'FALLBACK', weight: 1 } }],
    ["attach the one she may only read", 'endpoints/models/attach', { endpoint_id: ids.mChat, model_config: { model_definition_id: ids.aDef2, linkage_type: 'FALLBACK', weight: 1 } }],
    ["reroute her endpoint to alice's", 'endpoints/update', { endpoint_id: ids.mChat, model_configs: routed(ids.mDef, ids.aDef) }],
    ['a new endpoint on it', 'endpoints/create', { name: `mal-${tag}-x`, model_configs: routed(ids.mDef, ids.aDef) }],
    ['a new endpoint on it, lowerCamelCase', 'endpoints/create', { name: `mal-${tag}-x`, modelConfigs: [{ modelDefinitionId: ids.aDef, linkageType: 'PRIMARY', weight: 1 }] }],
    ["a model definition on alice's secret", 'model-definitions/create', { name: `mal-${tag}-d`, secret_id: ids.aKey, provider: 'openai', model_name: 'gpt-4o' }],
    ['the same, lowerCamelCase', 'model-definitions/create', { name: `mal-${tag}-d`, secretId: ids.aKey, provider: 'openai', modelName: 'gpt-4o' }],
    ["her model definition moved onto alice's secret", 'model-definitions/update', { model_definition_id: ids.mDef, secret_id: ids.aKey }],
    ["an endpoint whose usage traces go into alice's experiment", 'endpoints/create', { name: `mal-${tag}-y`, model_configs: routed(ids.mDef), experiment_id: ids.aliceExp }],
    ["her endpoint's usage traces moved into alice's experiment", 'endpoints/update', { endpoint_id: ids.mChat, experiment_id: ids.aliceExp }],
    // MLflow gets or creates `gateway/<name>`: alice's experiment of that name would take the traces.
    ["an endpoint named so that MLflow writes its traces into alice's 'gateway/<name>'", 'endpoints/create', { name: N.aTrap, model_configs: routed(ids.mDef) }],
  ];

  it('control: straight to MLflow, each lands', async () => {
    // One of each shape (the rest are the same requests under another spelling).
    const created = ok(await direct('POST', `${GW}/endpoints/create`, { body: { name: N.aTrap2, model_configs: routed(ids.mDef) } }), 'control');
    expect(created.endpoint.experiment_id).toBe(traps[N.aTrap2]);
    const attached = await direct('POST', `${GW}/endpoints/models/attach`, { body: { endpoint_id: created.endpoint.endpoint_id, model_config: { model_definition_id: ids.aDef, linkage_type: 'FALLBACK', weight: 1 } } });
    expect(attached.status, attached.text).toBe(200);
    ok(await direct('DELETE', `${GW}/endpoints/delete`, { body: { endpoint_id: created.endpoint.endpoint_id } }), 'clean up');
  });

  it.each(ATTEMPTS().map((a, i) => [a[0], i] as const))('%s: refused', async (_, i) => {
    const [, path, body] = ATTEMPTS()[i]!;
    const reply = await mallory('POST', `${GW}/${path}`, { body });
    refused(reply);
    // The refusal may name what she sent (an endpoint name that is also part of an experiment's).
    noLeak({ ...reply, text: reply.text.replaceAll(N.aTrap, '') });
  });

  it("afterwards her endpoint still routes only to her own definition, and nothing was built on alice's", async () => {
    const mine = ok(await direct('GET', `${GW}/endpoints/get`, { query: { endpoint_id: ids.mChat } }), 'get');
    expect(mine.endpoint.model_mappings.map((m: { model_definition_id: string }) => m.model_definition_id)).toEqual([ids.mDef]);
    expect(mine.endpoint.experiment_id).not.toBe(ids.aliceExp);
    const onAlicesKey = ok(await direct('GET', `${GW}/model-definitions/list`, { query: { secret_id: ids.aKey } }), 'list');
    expect(onAlicesKey.model_definitions.map((d: { name: string }) => d.name).sort()).toEqual([N.aDef, N.aDef2].sort());
    const endpoints = ok(await direct('GET', `${GW}/endpoints/list`), 'endpoints').endpoints.map((e: { name: string }) => e.name);
    expect(endpoints).not.toContain(`mal-${tag}-x`);
    expect(endpoints).not.toContain(`mal-${tag}-y`);
    expect(endpoints).not.toContain(N.aTrap);
    expect(await aliceObjects()).toBe(aliceBefore);
  });

  it('without a usage experiment the same name is hers to take (tracking off)', async () => {
    const created = await mallory('POST', `${GW}/endpoints/create`, { body: { name: N.aTrap, model_configs: routed(ids.mDef), usage_tracking: false } });
    expect(created.status, created.text).toBe(200);
    expect(created.json.endpoint.experiment_id ?? '').toBe('');
    ok(await mallory('DELETE', `${GW}/endpoints/delete`, { body: { endpoint_id: created.json.endpoint.endpoint_id } }), 'delete');
  });
});

describe('lists and answers show mallory only what she may read', () => {
  const names = (reply: Reply, key: string, field = 'name') => ((reply.json?.[key] ?? []) as Array<Record<string, string>>).map((r) => r[field]).sort();

  it('endpoints: hers, the one she may read, the one she may edit; no model definition or secret of alice\'s inside', async () => {
    for (const base of [GW, AJAX_GW]) {
      const reply = await mallory('GET', `${base}/endpoints/list`);
      expect(names(reply, 'endpoints')).toEqual([N.aRead, N.aShared, N.mChat, 'mlflow'].sort());
      noLeak({ ...reply, text: reply.text.replaceAll(N.aRead, '').replaceAll(N.aShared, '').replaceAll(ids.aRead, '') });
      expect(reply.text).not.toContain(N.aDef);
      expect(reply.text).not.toContain(N.aKey);
    }
  });

  it('secrets: only hers', async () => {
    expect(names(await mallory('GET', `${GW}/secrets/list`), 'secrets', 'secret_name')).toEqual([N.mKey]);
  });

  it("model definitions: hers and the one she may read, without alice's secret", async () => {
    const reply = await mallory('GET', `${GW}/model-definitions/list`);
    expect(names(reply, 'model_definitions')).toEqual([N.aDef2, N.mDef].sort());
    const readable = (reply.json.model_definitions as Array<Record<string, unknown>>).find((d) => d.name === N.aDef2)!;
    expect(readable.secret_id).toBeUndefined();
    expect(readable.secret_name).toBeUndefined();
    expect(reply.text).not.toContain(N.aKey);
    expect(reply.text).not.toContain(ids.aKey);
  });

  it('a readable endpoint and model definition are answered without what she may not read', async () => {
    const endpoint = await mallory('GET', `${GW}/endpoints/get`, { query: { endpoint_id: ids.aRead } });
    expect(endpoint.status).toBe(200);
    expect(endpoint.json.endpoint.name).toBe(N.aRead);
    for (const mapping of endpoint.json.endpoint.model_mappings ?? []) expect(mapping.model_definition_id).toBeUndefined();
    expect(endpoint.text).not.toContain(N.aDef);
    expect(endpoint.text).not.toContain(ids.aDef);
    const definition = await mallory('GET', `${GW}/model-definitions/get`, { query: { model_definition_id: ids.aDef2 } });
    expect(definition.status).toBe(200);
    expect(definition.text).not.toContain(N.aKey);
    expect(definition.text).not.toContain(ids.aKey);
    // Control: MLflow itself names them.
    const control = await direct('GET', `${GW}/endpoints/get`, { query: { endpoint_id: ids.aRead } });
    expect(control.text).toContain(N.aDef);
  });

  it('explain tells her about what she may read, under its name, as for registered models', async () => {
    const read = await mallory('GET', `${V2}/permissions/explain`, { query: { method: 'GET', path: `${GW}/endpoints/get?endpoint_id=${ids.aRead}` } });
    expect(read.json.verdict).toMatchObject({ allow: true, reason: 'direct-grant' });
    expect(read.json.resources).toMatchObject([{ kind: 'gateway_endpoint', id: N.aRead, direct: 'READ', effective: 'READ' }]);
    const use = await mallory('GET', `${V2}/permissions/explain`, { query: { method: 'POST', path: '/gateway/mlflow/v1/chat/completions', body: JSON.stringify(chatBody(N.aRead)) } });
    expect(use.json.verdict).toMatchObject({ allow: false, reason: 'direct-grant' });
    const own = await mallory('GET', `${V2}/permissions/explain`, { query: { method: 'POST', path: `/gateway/${N.mChat}/mlflow/invocations` } });
    expect(own.json.verdict).toMatchObject({ allow: true, reason: 'direct-grant' });
    expect(own.json.resources).toMatchObject([{ kind: 'gateway_endpoint', id: N.mChat, effective: 'MANAGE' }]);
  });

  it('the OpenAI-style model list: only the endpoints she may use', async () => {
    const reply = await mallory('GET', '/gateway/mlflow/v1/models');
    expect(reply.status).toBe(200);
    expect(((reply.json.data ?? []) as Array<{ id: string }>).map((m) => m.id).sort()).toEqual([N.aShared, N.mChat, 'mlflow'].sort());
    const everything = await admin('GET', '/gateway/mlflow/v1/models');
    expect(((everything.json.data ?? []) as Array<{ id: string }>).map((m) => m.id)).toContain(N.aChat);
  });
});

describe("an endpoint's usage experiment", () => {
  it('the one MLflow made for her endpoint is hers to manage; an existing one of that name stays alice\'s', async () => {
    const mine = ok(await direct('GET', `${GW}/endpoints/get`, { query: { endpoint_id: ids.mChat } }), 'get').endpoint.experiment_id as string;
    const experiment = ok(await mallory('GET', `${V2}/experiments/get`, { query: { experiment_id: mine } }), 'her usage experiment');
    expect(experiment.experiment.name).toBe(`gateway/${N.mChat}`);
    refused(await mallory('GET', `${V2}/experiments/get`, { query: { experiment_id: traps[N.aTrap]! } }));
    refused(await mallory('GET', `${V2}/experiments/get`, { query: { experiment_id: traps[N.aTrap2]! } }));
  });
});

describe("squatting a future endpoint's usage experiment", () => {
  // MLflow reuses an existing `gateway/<name>` as the usage experiment of an endpoint made later: every
  // caller's prompts and answers would land in the squatter's experiment (who could grant its creator EDIT first).
  const future = `future-${tag}`;
  it.each([
    ['create', 'experiments/create', () => ({ name: `gateway/${future}` })],
    ['create, upper case (a case-insensitive database)', 'experiments/create', () => ({ name: `GATEWAY/${future}` })],
    ['create, leading space', 'experiments/create', () => ({ name: ` gateway/${future}` })],
    ['rename', 'experiments/update', () => ({ experiment_id: ids.mExp, new_name: `gateway/${future}` })],
    ['rename, lowerCamelCase (MLflow before 3.17 reads it)', 'experiments/update', () => ({ experiment_id: ids.mExp, newName: `gateway/${future}` })],
  ] as const)('mallory may not take a gateway/ name: %s is refused and nothing is made', async (_label, path, body) => {
    if (!ids.mExp) ids.mExp = ok(await mallory('POST', `${V2}/experiments/create`, { body: { name: `mal-${tag}-own` } }), 'own').experiment_id as string;
    const reply = await mallory('POST', `${V2}/${path}`, { body: body() });
    refused(reply);
    expect(reply.json.message).toMatch(/gateway\//);
    const found = await direct('GET', `${V2}/experiments/get-by-name`, { query: { experiment_name: `gateway/${future}` } });
    expect(found.status).toBe(404);
  });

  it('an administrator still may, and her own names elsewhere are untouched', async () => {
    const made = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `gateway/${future}-admin` } }), 'admin');
    expect(made.experiment_id).toBeTruthy();
    ok(await mallory('POST', `${V2}/experiments/update`, { body: { experiment_id: ids.mExp, new_name: `mal-${tag}-gateway/ok` } }), 'rename elsewhere');
  });
});

describe('renames', () => {
  it("into alice's name: MLflow refuses, and mallory gains nothing on it", async () => {
    const reply = await mallory('POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.mChat, name: N.aChat } });
    expect(reply.status).toBeGreaterThanOrEqual(400);
    refused(await mallory('GET', `${GW}/endpoints/get`, { query: { name: N.aChat } }));
    expect((await alice('GET', `${GW}/endpoints/get`, { query: { name: N.aChat } })).status).toBe(200);
  });

  it('into a name her MANAGE pattern matches, with EDIT through a group: refused (a rename that changes the patterns needs MANAGE)', async () => {
    refused(await mallory('POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.aShared, name: `mine-${tag}-stolen` } }));
    expect(ok(await direct('GET', `${GW}/endpoints/get`, { query: { endpoint_id: ids.aShared } }), 'get').endpoint.name).toBe(N.aShared);
  });

  it("into a name she holds a stale MANAGE grant on: with EDIT she may not (pattern grants of endpoints exist); alice's rename prunes the stale grant, so she cannot delete it", async () => {
    refused(await mallory('POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.aShared, name: N.ghost } }));
    const renamed = await alice('POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.aShared, name: N.ghost } });
    expect(renamed.status, renamed.text).toBe(200);
    refused(await mallory('DELETE', `${GW}/endpoints/delete`, { body: { endpoint_id: ids.aShared } }));
    refused(await mallory('POST', `${GW}/endpoints/update`, { body: { endpoint_id: ids.aShared, name: `mine-${tag}-later` } }));
    // Her group's EDIT followed the endpoint; alice's MANAGE did too.
    expect((await mallory('POST', `${GW}/endpoints/set-tag`, { body: { endpoint_id: ids.aShared, key: 'k', value: 'v' } })).status).toBe(200);
    expect((await alice('GET', `${GW}/endpoints/get`, { query: { name: N.ghost } })).status).toBe(200);
  });
});

describe('a permitted invocation still streams', () => {
  it("the first chunk reaches mallory while the provider still holds the last", async () => {
    const response = await fetch(`${fg.url}/gateway/mlflow/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: basic('mallory', malloryToken), 'content-type': 'application/json' },
      body: JSON.stringify({ ...chatBody(N.mChat), stream: true }),
      signal: AbortSignal.timeout(60_000),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('first')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    // Only now may the provider finish: a buffered answer would never have shown the first chunk.
    expect(text).toContain('first');
    expect(text).not.toContain('last');
    provider.release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    expect(text).toContain('last');
  });
});

describe("the gateway's secrets config", () => {
  it('tells her whether secrets can be stored, not whether the default passphrase protects them (as MLflow does)', async () => {
    const control = ok(await direct('GET', '/ajax-api/3.0/mlflow/gateway/secrets/config'), 'control');
    expect(control).toHaveProperty('using_default_passphrase');
    const reply = ok(await mallory('GET', '/ajax-api/3.0/mlflow/gateway/secrets/config'), 'config');
    expect(reply).toHaveProperty('secrets_available');
    expect(reply).not.toHaveProperty('using_default_passphrase');
    expect(ok(await admin('GET', '/ajax-api/3.0/mlflow/gateway/secrets/config'), 'admin')).toHaveProperty('using_default_passphrase');
  });
});

describe('secret values', () => {
  it('appear in no answer, to anyone, through flowgate or from MLflow', async () => {
    for (const as of [admin, alice]) for (const what of ['secrets', 'model-definitions', 'endpoints']) await as('GET', `${GW}/${what}/list`);
    await admin('GET', `${GW}/secrets/get`, { query: { secret_id: ids.aKey } });
    expect(exchanges.length).toBeGreaterThan(50);
    for (const e of exchanges) for (const value of Object.values(SECRETS)) expect(e.text, `${e.method} ${e.url}`).not.toContain(value);
  });
});
