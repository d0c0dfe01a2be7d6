import { describe, expect, it } from 'vitest';
import { compilePattern, patternProblem } from '../../src/authz/pattern-match.js';
import { parseWorkspaceGroupRules, workspaceRoleOf } from '../../src/workspaces/group-rules.js';
import { DEFAULT_WORKSPACE, qualify, SEPARATOR, splitQualified, workspaceNameProblem } from '../../src/workspaces/names.js';
import { currentWorkspace, inWorkspace, keepingWorkspace } from '../../src/workspaces/request-workspace.js';

describe("workspace keys: the stored form of an id in its workspace", () => {
  const texts = ['foo', 'a/b', '', 'ws-b\u001ffoo', 'default\u001fx', '\u001f', 'ü🙂'];
  const workspaces = [undefined, DEFAULT_WORKSPACE, 'ws-a', 'ws-b'];

  it('the default workspace keeps ids as they are (a store from before workspaces is its own)', () => {
    expect(qualify(undefined, 'foo')).toBe('foo');
    expect(qualify(DEFAULT_WORKSPACE, '12')).toBe('12');
  });

  it('is one-to-one over every workspace and any text, and splits back', () => {
    const seen = new Map<string, string>();
    for (const ws of workspaces)
      for (const id of texts) {
        const stored = qualify(ws, id);
        const key = `${ws ?? DEFAULT_WORKSPACE}|${id}`;
        const before = seen.get(stored);
        if (before !== undefined) expect(before).toBe(key);
        seen.set(stored, key);
        expect(splitQualified(stored)).toEqual({ workspace: ws ?? DEFAULT_WORKSPACE, id });
      }
  });

  it("MLflow's rule for workspace names", () => {
    for (const ok of ['default', 'ws-a', 'a', 'team-1']) expect(workspaceNameProblem(ok)).toBeUndefined();
    for (const bad of ['', 'WS', '-a', 'a-', 'a b', `a${SEPARATOR}b`, 'x'.repeat(64)]) expect(workspaceNameProblem(bad)).toBeDefined();
  });
});

describe('pattern grants stay in their workspace', () => {
  it("a default-workspace pattern never matches another workspace's names; a workspace's pattern only its own", () => {
    const star = compilePattern('*');
    expect(star.matches('foo')).toBe(true);
    expect(star.matches(qualify('ws-a', 'foo'))).toBe(false);
    const inA = compilePattern(qualify('ws-a', 'team-*'));
    expect(inA.matches(qualify('ws-a', 'team-x'))).toBe(true);
    expect(inA.matches(qualify('ws-b', 'team-x'))).toBe(false);
    expect(inA.matches('team-x')).toBe(false);
  });
  it('a pattern holding the separator anywhere but after a workspace name is refused', () => {
    expect(patternProblem(`ws-b${SEPARATOR}*`)).toBeUndefined();
    expect(patternProblem(`WS${SEPARATOR}*`)).toBeDefined();
    expect(patternProblem(`ws-a${SEPARATOR}ws-b${SEPARATOR}*`)).toBeDefined();
    expect(patternProblem(`x*${SEPARATOR}`)).toBeDefined();
  });
});

describe("the request's workspace", () => {
  it('is entered for a named workspace, not for the default one, and kept by a bound callback', async () => {
    expect(currentWorkspace()).toBeUndefined();
    const later = await inWorkspace('ws-a', async () => {
      await Promise.resolve();
      expect(currentWorkspace()).toBe('ws-a');
      expect(inWorkspace(DEFAULT_WORKSPACE, () => currentWorkspace())).toBeUndefined();
      return keepingWorkspace(() => currentWorkspace());
    });
    expect(currentWorkspace()).toBeUndefined();
    expect(later()).toBe('ws-a');
  });

  it("keeps a default-workspace callback in no workspace, even when called from another workspace's context (a pooled socket's events)", async () => {
    // A connection to MLflow opened while a ws-v request was served runs its events in ws-v's context.
    await inWorkspace('ws-v', async () => undefined);
    const hook = keepingWorkspace(() => currentWorkspace());
    const fromSocketOfWsV = inWorkspace('ws-v', () => hook());
    expect(fromSocketOfWsV).toBeUndefined();
  });
});

describe('group → workspace rules', () => {
  it('parses rules and gives the first matching one', () => {
    const rules = parseWorkspaceGroupRules('team-*=team-*, ml-admins=ml:MANAGE ,data=*');
    expect(rules).toBe("'data=*': the workspace repeats the group's '*', which it does not have");
    const ok = parseWorkspaceGroupRules('team-*=team-*, ml-admins=ml:MANAGE, ws-*=*');
    if (typeof ok === 'string') throw new Error(ok);
    expect(workspaceRoleOf(ok, 'team-a')).toEqual({ workspace: 'team-a', level: 'USE' });
    expect(workspaceRoleOf(ok, 'ml-admins')).toEqual({ workspace: 'ml', level: 'MANAGE' });
    expect(workspaceRoleOf(ok, 'ws-x')).toEqual({ workspace: 'x', level: 'USE' });
    expect(workspaceRoleOf(ok, 'ws-Bad Name')).toBeUndefined();
    expect(workspaceRoleOf(ok, 'other')).toBeUndefined();
    expect(parseWorkspaceGroupRules('nonsense')).toMatch(/is not GROUP=WORKSPACE/);
    expect(parseWorkspaceGroupRules('a=B')).toMatch(/not GROUP=WORKSPACE|not an MLflow workspace name/);
  });
});

describe("MLflow's workspace mode", () => {
  const silent = { info: () => undefined } as never;
  it("is followed from the readiness probe's answer, and MLflow is asked once a second at most", async () => {
    const { createWorkspaceMode } = await import('../../src/workspaces/workspace-mode.js');
    let calls = 0;
    let answer = { status: 200, json: { store_type: 'SqlStore', workspaces_enabled: true } as unknown };
    const upstream = { call: async () => (calls++, answer) };
    let t = 0;
    const mode = createWorkspaceMode(upstream as never, silent, () => t);
    expect(mode.known).toBe(false);
    await Promise.all([mode.refresh(), mode.refresh(), mode.refresh()]);
    expect(calls).toBe(1);
    expect(mode).toMatchObject({ known: true, enabled: true });
    await mode.refresh();
    expect(calls).toBe(1);
    t = 1500;
    answer = { status: 404, json: undefined };
    await mode.refresh();
    expect(calls).toBe(2);
    expect(mode.enabled).toBe(false);
    mode.observe('{"store_type":"SqlStore","workspaces_enabled":true,"trace_archival_enabled":false');
    expect(mode.enabled).toBe(true);
    mode.observe('{"store_type":"SqlStore","multipart');
    expect(mode.enabled).toBe(true);
    mode.observe('{"workspaces_enabled": false}');
    expect(mode.enabled).toBe(false);
  });
});

describe("a request's entry into its workspace", () => {
  it('follows MLflow restarted with or without workspaces at the first request naming one, without waiting for a readiness probe', async () => {
    const { createWorkspaceMode } = await import('../../src/workspaces/workspace-mode.js');
    const { createWorkspaceEntry } = await import('../../src/workspaces/request-entry.js');
    let t = 0;
    let on = false;
    let asked = 0;
    const upstream = {
      call: async (_method: string, path: string) =>
        path.endsWith('/server-info') ? (asked++, { status: 200, json: { workspaces_enabled: on } }) : { status: 200, json: {} },
    };
    const mode = createWorkspaceMode(upstream as never, { info: () => undefined } as never, () => t);
    const entry = createWorkspaceEntry(mode, upstream as never);
    const inWs = { headers: { 'x-mlflow-workspace': 'ws-v' } } as never;
    const inDefault = { headers: {} } as never;
    const actsIn = (req: never) => entry.run(req, async () => void (seen = currentWorkspace())).then(() => seen);
    let seen: string | undefined;
    expect(await actsIn(inWs)).toBeUndefined();
    expect(asked).toBe(1);
    // MLflow is restarted with workspaces; no readiness probe has read it yet.
    on = true;
    t = 1500;
    expect(await actsIn(inDefault)).toBeUndefined();
    expect(asked).toBe(1);
    expect(await actsIn(inWs)).toBe('ws-v');
    expect(asked).toBe(2);
    // Within the second, what MLflow said stands without asking again.
    t = 2000;
    expect(await actsIn(inWs)).toBe('ws-v');
    expect(asked).toBe(2);
    // And restarted without: the request is no longer decided in ws-v (MLflow acts in the default workspace).
    on = false;
    t = 4000;
    expect(await actsIn(inWs)).toBeUndefined();
    expect(asked).toBe(3);
  });

  it('is never decided outside the workspace it names, even when MLflow starts to say so mid-request', async () => {
    const { createWorkspaceEntry } = await import('../../src/workspaces/request-entry.js');
    const mode = { known: false, enabled: false, refresh: async () => undefined, observe: () => undefined, saidWithin: () => true };
    const upstream = { call: async () => ({ status: 200, json: {} }) };
    const entry = createWorkspaceEntry(mode as never, upstream as never);
    const req = { headers: { 'x-mlflow-workspace': 'ws-b' } } as never;
    const outcome = await entry.run(req, async () => {
      // MLflow answered between the entry (nothing said yet) and the check.
      mode.known = true;
      mode.enabled = true;
      await entry.check(req);
    }).then(() => 'decided', (e: Error) => e.message);
    expect(outcome).toMatch(/send the request again/);
    // Entered in its workspace, it passes.
    const passed = await entry.run(req, async () => entry.check(req)).then(() => 'decided');
    expect(passed).toBe('decided');
    // Unsaid, a request naming another workspace waits; one in the default workspace goes on.
    mode.known = false;
    await expect(entry.run(req, async () => entry.check(req))).rejects.toThrow(/has not said/);
    await expect(entry.run({ headers: {} } as never, async () => entry.check({ headers: {} } as never))).resolves.toBeUndefined();
  });
});
