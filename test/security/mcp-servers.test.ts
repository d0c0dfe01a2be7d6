import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { caller, ok, type Caller, type Exchange } from './harness/http.js';
import { randomHex, V2 } from './harness/world.js';

/*
 * Issue 35, MLflow's MCP server registry, against the real MLflow (pinned). alice keeps servers named
 * `com.vic-<tag>.…/…` (versions, an alias, tags, an access endpoint); mallory manages her own, reads one
 * of alice's and edits another. Every attack goes through flowgate as mallory; where MLflow itself would
 * act on the request, the same request sent to MLflow directly (the control) shows it. A bypass is a
 * change to alice's servers (MLflow's own state is compared before and after) or one of her names, URLs
 * or endpoint ids in an answer mallory may not read.
 */
const tag = randomHex(3);
const MCP = '/api/3.0/mlflow/mcp-servers';
const AJAX_MCP = '/ajax-api/3.0/mlflow/mcp-servers';
const VIC = `com.vic-${tag}`;
const N = {
  secret: `${VIC}/secret-tools`,
  read: `${VIC}/read-tools`,
  shared: `${VIC}/shared-tools`,
  mine: `io.mal-${tag}/tools`,
};
/** alice's servers mallory holds nothing on, beside `secret`: they interleave with hers in every search page. */
const HIDDEN = ['aa', 'bb', 'cc', 'dd'].map((s) => `${VIC}/${s}-hidden`);
const SECRET_URL = `https://secret-${tag}.example.com/mcp`;

let mlflow: MlflowServer;
let fg: TestFlowgate;
const exchanges: Exchange[] = [];
const keep = (e: Exchange) => exchanges.push(e);
/** What mallory was answered: no name of alice's she may not read may be in it. */
const toMallory: Exchange[] = [];
let admin: Caller;
let alice: Caller;
let mallory: Caller;
let direct: Caller;
let secretEndpoint = '';
let mineEndpoint = '';

const version = (name: string, v: string) => ({ server_json: { name, version: v } });
const at = (name: string, rest = '', base = MCP) => `${base}/${name}${rest}`;

async function user(name: string, observe: (e: Exchange) => void = keep): Promise<Caller> {
  ok(await admin('POST', `${V2}/users/create`, { body: { username: name } }), `create ${name}`);
  const token = ok(await admin('PATCH', `${V2}/permissions/users/access-token`, { body: { username: name } }), 'token').token as string;
  return caller(fg.url, basic(name, token), observe);
}

/** Everything MLflow has under alice's servers, straight from MLflow. */
async function aliceState(): Promise<string> {
  const names = [N.secret, N.read, N.shared, ...HIDDEN];
  const parts = await Promise.all(
    names.flatMap((name) => ['', '/versions', '/endpoints'].map(async (rest) => `${name}${rest} ${(await direct('GET', at(name, rest))).text}`)),
  );
  return parts.join('\n');
}
let aliceBefore: string;

/** What an answer tells of alice's servers mallory may not read, beyond what her request itself named (`sent`, echoed in refusals). */
const leaked = (text: string, sent = '') => [N.secret, ...HIDDEN, SECRET_URL, secretEndpoint].filter((s) => s !== '' && text.includes(s) && !sent.includes(s));

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  admin = caller(fg.url, adminAuth(), keep);
  direct = caller(mlflow.url, undefined, () => undefined);
  alice = await user('alice');
  mallory = await user('mallory', (e) => {
    keep(e);
    toMallory.push(e);
  });
  for (const name of [N.secret, N.read, N.shared, ...HIDDEN]) {
    ok(await alice('POST', MCP, { body: { name } }), `create ${name}`);
    ok(await alice('POST', at(name, '/versions'), { body: version(name, '1.0.0') }), `version of ${name}`);
  }
  ok(await alice('POST', at(N.secret, '/aliases'), { body: { alias: 'prod', version: '1.0.0' } }), 'alias');
  ok(await alice('POST', at(N.secret, '/tags'), { body: { key: 'owner', value: 'alice' } }), 'tag');
  secretEndpoint = ok(await alice('POST', at(N.secret, '/endpoints'), { body: { url: SECRET_URL, server_version: '1.0.0' } }), 'endpoint').id as string;
  ok(await admin('POST', `${V2}/permissions/users/mallory/mcp-servers/${N.read}`, { body: { permission: 'READ' } }), 'READ');
  ok(await admin('POST', `${V2}/permissions/users/mallory/mcp-servers/${N.shared}`, { body: { permission: 'EDIT' } }), 'EDIT');
  ok(await mallory('POST', MCP, { body: { name: N.mine } }), 'her own');
  ok(await mallory('POST', at(N.mine, '/versions'), { body: version(N.mine, '1.0.0') }), 'her version');
  mineEndpoint = ok(await mallory('POST', at(N.mine, '/endpoints'), { body: { url: 'https://mallory.example.com/mcp', server_version: '1.0.0' } }), 'her endpoint').id as string;
  aliceBefore = await aliceState();
}, 240_000);

afterAll(async () => {
  await fg?.close();
  await mlflow?.stop();
});

describe("another's server, by every spelling of its name", () => {
  /** Every route under a server, with what it would do there. */
  const routes = (name: string, base = MCP): Array<[string, string, unknown?]> => [
    ['GET', at(name, '', base)],
    ['PATCH', at(name, '', base), { description: 'pwned' }],
    ['DELETE', at(name, '', base)],
    ['GET', at(name, '/versions', base)],
    ['POST', at(name, '/versions', base), version(name, '6.6.6')],
    ['GET', at(name, '/versions/1.0.0', base)],
    ['PATCH', at(name, '/versions/1.0.0', base), { status: 'active' }],
    ['DELETE', at(name, '/versions/1.0.0', base)],
    ['POST', at(name, '/versions/1.0.0/tags', base), { key: 'pwned', value: '1' }],
    ['DELETE', at(name, '/versions/1.0.0/tags/qa', base)],
    ['GET', at(name, '/endpoints', base)],
    ['POST', at(name, '/endpoints', base), { url: 'https://evil.example.com/mcp' }],
    ['GET', at(name, `/endpoints/${secretEndpoint}`, base)],
    ['PATCH', at(name, `/endpoints/${secretEndpoint}`, base), { url: 'https://evil.example.com/mcp' }],
    ['DELETE', at(name, `/endpoints/${secretEndpoint}`, base)],
    ['POST', at(name, '/tags', base), { key: 'owner', value: 'mallory' }],
    ['DELETE', at(name, '/tags/owner', base)],
    ['POST', at(name, '/aliases', base), { alias: 'prod', version: '1.0.0' }],
    ['GET', at(name, '/aliases/prod', base)],
    ['DELETE', at(name, '/aliases/prod', base)],
  ];

  it('MLflow itself acts on these requests (the control): a change there is what flowgate must refuse', async () => {
    const probe = `${VIC}/control-${tag}`;
    ok(await direct('POST', MCP, { body: { name: probe } }), 'control create');
    ok(await direct('PATCH', at(probe), { body: { description: 'changed' } }), 'control update');
    ok(await direct('POST', at(probe, '/tags'), { body: { key: 'k', value: 'v' } }), 'control tag');
    ok(await direct('DELETE', at(probe)), 'control delete');
  });

  it.each([
    ['the name as MLflow spells it', MCP, N.secret],
    ['the ajax-api twin', AJAX_MCP, N.secret],
  ])('%s: every route is refused (403), nothing changes', async (_, base, name) => {
    for (const [method, path, body] of routes(name, base)) {
      const reply = await mallory(method, path, body === undefined ? {} : { body });
      expect(reply.status, `${method} ${path}`).toBe(403);
      expect(reply.json?.error_code).toBe('PERMISSION_DENIED');
    }
    expect(await aliceState()).toBe(aliceBefore);
  });

  it('an encoded slash names the same server (normalized before the decision); a double-encoded one is refused', async () => {
    const encoded = N.secret.replace('/', '%2F');
    for (const rest of ['', '/versions/1.0.0', `/endpoints/${secretEndpoint}`]) {
      expect((await mallory('GET', `${MCP}/${encoded}${rest}`, { verbatim: true })).status).toBe(403);
      expect((await mallory('GET', `${MCP}/${N.secret.replace('/', '%252F')}${rest}`, { verbatim: true })).status).toBe(400);
    }
    expect((await mallory('PATCH', `${MCP}/${encoded}`, { body: { description: 'pwned' }, verbatim: true })).status).toBe(403);
    // Climbing out of her own server's path lands on alice's, which is what is decided on.
    const climb = `${MCP}/${N.mine}/..%2F..%2F${encoded}`;
    expect((await mallory('PATCH', climb, { body: { description: 'pwned' }, verbatim: true })).status).toBe(403);
    expect((await mallory('DELETE', `${MCP}/${N.mine}/../../${N.secret}`, { verbatim: true })).status).toBe(403);
    expect(await aliceState()).toBe(aliceBefore);
  });

  it("case variants: a variant of alice's name is another name, decided on its own grants (none); of the path, no route", async () => {
    const upper = N.secret.toUpperCase();
    expect((await mallory('GET', at(upper))).status).toBe(403);
    expect((await mallory('GET', `/API/3.0/mlflow/mcp-servers/${N.secret}`)).status).toBe(403);
    expect((await mallory('GET', `/ajax-api/3.0/mlflow/MCP-SERVERS/${N.secret}`)).status).toBe(403);
    // She may make the variant (a new name to MLflow's SQL store) and manage it: it is hers, not alice's.
    expect((await mallory('POST', MCP, { body: { name: upper } })).status).toBe(200);
    expect((await mallory('PATCH', at(upper), { body: { description: 'mine' } })).status).toBe(200);
    expect((await mallory('DELETE', at(upper))).status).toBe(200);
    expect(await aliceState()).toBe(aliceBefore);
  });
});

describe('names in bodies against the path', () => {
  it("a version's server_json names alice's server under mallory's path: MLflow refuses, nothing is added to alice's", async () => {
    const reply = await mallory('POST', at(N.mine, '/versions'), { body: version(N.secret, '2.0.0') });
    expect(reply.status).toBe(400);
    // Under alice's path with her own name in the body: decided on the path, refused.
    expect((await mallory('POST', at(N.secret, '/versions'), { body: version(N.mine, '2.0.0') })).status).toBe(403);
    // A registry envelope (`server_json.server`) is unwrapped by MLflow: the same rule.
    expect((await mallory('POST', at(N.mine, '/versions'), { body: { server_json: { server: { name: N.secret, version: '2.0.0' } } } })).status).toBe(400);
    expect(await aliceState()).toBe(aliceBefore);
  });

  it("a name in an update's or sub-route's body is not read (MLflow takes the path's)", async () => {
    expect((await mallory('PATCH', at(N.mine), { body: { name: N.secret, description: 'mine' } })).status).toBe(200);
    expect((await mallory('POST', at(N.mine, '/tags'), { body: { key: 'k', value: 'v', name: N.secret } })).status).toBe(200);
    expect((await mallory('POST', at(N.mine, '/endpoints'), { body: { url: 'https://m.example.com/x', server_version: '1.0.0', server_name: N.secret } })).status).toBe(200);
    expect(await aliceState()).toBe(aliceBefore);
  });

  it("creating a server under alice's name: MLflow answers it exists, and mallory gets no grant on it", async () => {
    const reply = await mallory('POST', MCP, { body: { name: N.secret } });
    expect(reply.status).toBe(400);
    expect(reply.json.error_code).toBe('RESOURCE_ALREADY_EXISTS');
    expect((await admin('GET', `${V2}/permissions/users/mallory/mcp-servers/${N.secret}`)).status).toBe(404);
    // A first version under alice's name: the server exists, so it is a change of it, refused.
    expect((await mallory('POST', at(N.secret, '/versions'), { body: version(N.secret, '3.0.0') })).status).toBe(403);
    expect(await aliceState()).toBe(aliceBefore);
  });
});

describe("versions, aliases and endpoints of another server, reached through her own", () => {
  it("an endpoint id of alice's under mallory's server: MLflow refuses it, nothing of alice's is answered or changed", async () => {
    for (const [method, body] of [['GET'], ['PATCH', { url: 'https://evil.example.com/mcp' }], ['DELETE']] as const) {
      const reply = await mallory(method, at(N.mine, `/endpoints/${secretEndpoint}`), body === undefined ? {} : { body });
      expect(reply.status, method).toBeGreaterThanOrEqual(400);
      // Only the id she sent comes back (MLflow: it does not belong to her server); never its URL or server.
      expect(leaked(reply.text, secretEndpoint), method).toEqual([]);
    }
    expect(await aliceState()).toBe(aliceBefore);
  });

  it('her versions, aliases and tags are her own: the same version number and alias act on her server alone', async () => {
    expect((await mallory('POST', at(N.mine, '/aliases'), { body: { alias: 'prod', version: '1.0.0' } })).status).toBe(200);
    const resolved = ok(await mallory('GET', at(N.mine, '/aliases/prod')), 'her alias');
    expect(resolved.name).toBe(N.mine);
    expect((await mallory('DELETE', at(N.mine, '/aliases/prod'))).status).toBe(200);
    expect(await aliceState()).toBe(aliceBefore);
  });

  it("MLflow's greedy `{name:path}` reads nothing of alice's from a path flowgate decides on mallory's server", async () => {
    // Each is decided on her server (flowgate reads the first two segments, as MLflow's basic-auth does),
    // while MLflow's router takes a longer name no server can have: nothing is found, nothing told.
    for (const rest of [`/aliases/x/versions/1.0.0`, `/aliases/${N.secret}/versions/1.0.0`, `/aliases/a/endpoints/${secretEndpoint}`]) {
      const reply = await mallory('GET', at(N.mine, rest));
      expect(reply.status, rest).not.toBe(200);
      expect(leaked(reply.text, rest), rest).toEqual([]);
    }
    for (const rest of [`/tags/x/versions/1.0.0`, `/aliases/${N.secret}/versions/1.0.0`]) expect((await mallory('DELETE', at(N.mine, rest))).status, rest).not.toBe(200);
    expect(await aliceState()).toBe(aliceBefore);
  });

  it('a reserved word as a slug is no server: refused before MLflow reads it as a shorter name', async () => {
    for (const word of ['versions', 'endpoints', 'tags', 'aliases'])
      expect((await mallory('GET', `${MCP}/${VIC}/${word}`)).status, word).toBe(400);
  });
});

describe('unknown sub-routes fail closed', () => {
  it('a path no row takes is refused to mallory, even under her own server', async () => {
    const unknown: Array<[string, string]> = [
      ['GET', at(N.mine, '/unknown')],
      ['GET', at(N.mine, '/versions/1.0.0/unknown')],
      ['GET', at(N.mine, '/versions/1.0.0/tags')],
      ['POST', at(N.mine)],
      ['PUT', at(N.mine)],
      ['GET', `${MCP}/io.mal-${tag}`],
      ['GET', `${MCP}/${N.mine}/extra/segment`],
      ['GET', `${MCP}/${N.mine}/`],
      ['POST', `${MCP}/endpoints`],
      ['DELETE', MCP],
    ];
    for (const [method, path] of unknown) expect((await mallory(method, path)).status, `${method} ${path}`).toBe(403);
  });
});

describe('searches', () => {
  const names = (json: any, key = 'mcp_servers', field = 'name') => ((json?.[key] ?? []) as Array<Record<string, string>>).map((s) => s[field]!);

  it("answer only the servers she may read, and their endpoints: no page, token or count tells of alice's others", async () => {
    const all = ok(await mallory('GET', MCP), 'search');
    expect(names(all).sort()).toEqual([N.mine, N.read, N.shared].sort());
    const byFilter = ok(await mallory('GET', MCP, { query: { filter_string: `name LIKE '${VIC}%'` } }), 'filtered');
    expect(names(byFilter).sort()).toEqual([N.read, N.shared].sort());
    const endpoints = ok(await mallory('GET', `${MCP}/endpoints`), 'endpoints');
    expect(names(endpoints, 'mcp_access_endpoints', 'server_name')).toEqual([N.mine, N.mine]);
    for (const reply of [all, byFilter, endpoints]) expect(leaked(JSON.stringify(reply))).toEqual([]);
  });

  it('one at a time, in either order: each readable server once, then no token; the tokens are sealed', async () => {
    for (const order of ['name ASC', 'name DESC']) {
      const seen: string[] = [];
      let token: string | undefined;
      for (let page = 0; page < 10; page++) {
        const reply = ok(await mallory('GET', AJAX_MCP, { query: { max_results: '1', order_by: order, ...(token ? { page_token: token } : {}) } }), 'page');
        expect(leaked(JSON.stringify(reply))).toEqual([]);
        seen.push(...names(reply));
        token = reply.next_page_token ?? undefined;
        if (!token) break;
        // Not MLflow's offset token, which would count the servers passed over.
        expect(() => JSON.parse(Buffer.from(token!, 'base64').toString())).toThrow();
      }
      const ascending = [N.mine, N.read, N.shared].sort();
      expect(seen).toEqual(order === 'name ASC' ? ascending : ascending.reverse());
    }
  });

  it("MLflow's own page token, forged, is refused rather than resumed at an offset", async () => {
    const forged = Buffer.from(JSON.stringify({ offset: 1 })).toString('base64');
    const reply = await mallory('GET', MCP, { query: { page_token: forged } });
    expect(reply.status).toBe(400);
    expect(leaked(reply.text)).toEqual([]);
  });
});

describe('grants on what she may only edit or read', () => {
  it('EDIT on a server neither deletes under it nor hands out access', async () => {
    expect((await mallory('POST', at(N.shared, '/tags'), { body: { key: 'edited', value: 'mallory' } })).status).toBe(200);
    for (const rest of ['', '/versions/1.0.0', '/tags/edited']) expect((await mallory('DELETE', at(N.shared, rest))).status, rest).toBe(403);
    expect((await mallory('POST', `${V2}/permissions/users/mallory/mcp-servers/${N.shared}`, { body: { permission: 'MANAGE' } })).status).toBe(403);
    expect((await mallory('PATCH', `${V2}/permissions/users/mallory/mcp-servers/${N.shared}`, { body: { permission: 'MANAGE' } })).status).toBe(403);
    expect((await mallory('GET', `${V2}/permissions/mcp-servers/${N.shared}/users`)).status).toBe(403);
    ok(await alice('DELETE', at(N.shared, '/tags/edited')), 'alice tidies');
  });

  it('READ reads and changes nothing', async () => {
    expect((await mallory('GET', at(N.read, '/versions/1.0.0'))).status).toBe(200);
    for (const [method, rest, body] of [
      ['PATCH', '', { description: 'x' }],
      ['POST', '/tags', { key: 'x', value: 'y' }],
      ['POST', '/versions', version(N.read, '9.9.9')],
    ] as const)
      expect((await mallory(method, at(N.read, rest), { body })).status, `${method} ${rest}`).toBe(403);
    expect(await aliceState()).toBe(aliceBefore);
  });

  it("after every attack, alice's servers are as she left them and no answer to mallory named the ones she may not read", () => {
    expect(toMallory.length).toBeGreaterThan(100);
    for (const e of toMallory) expect(leaked(e.text, `${decodeURIComponent(e.url)} ${e.requestBody ?? ''}`), `${e.method} ${e.url}`).toEqual([]);
  });
});
