import type { Action } from './action.js';
import { UsageError } from './connection.js';

interface Explanation {
  route: { method: string; pattern: string; need: string } | null;
  resources: Array<{ kind: string; id: string; direct: string | null; groups: Array<{ group: string; permission: string }>; effective: string; rule: string }>;
  verdict: { allow: boolean; reason: string; checks: Array<{ check: string; allow: boolean; reason: string }>; message?: string };
}

/** `flowgate explain METHOD PATH`: the decision flowgate makes on that request, and why (the admin API's explain route). */
export const EXPLAIN: Action = {
  usage: "flowgate explain METHOD PATH [--user NAME] [--body JSON]   e.g. flowgate explain GET '/api/2.0/mlflow/experiments/get?experiment_id=1' --user alice",
  options: { user: { type: 'string' }, body: { type: 'string' } },
  args: ['METHOD', 'PATH'],
  async run({ client, io, json, values, args }) {
    const [method, path] = args as [string, string];
    if (!path.startsWith('/')) throw new UsageError('PATH must start with /');
    const q = new URLSearchParams({ method: method.toUpperCase(), path });
    if (typeof values.user === 'string') q.set('username', values.user);
    if (typeof values.body === 'string') q.set('body', values.body);
    const e = await client.call<Explanation & { username: string }>('GET', `permissions/explain?${q}`);
    if (json) return io.out(`${JSON.stringify(e, null, 2)}\n`);
    io.out(`${e.verdict.allow ? 'ALLOW' : 'DENY'} ${e.username} ${method.toUpperCase()} ${path} (${e.verdict.reason})\n`);
    io.out(`route: ${e.route ? `${e.route.method} ${e.route.pattern} needs ${e.route.need}` : 'none: not an MLflow route flowgate knows'}\n`);
    for (const r of e.resources) {
      const groups = r.groups.map((g) => `${g.group}=${g.permission}`).join(', ') || 'none';
      io.out(`${r.kind} ${r.id}: direct ${r.direct ?? 'none'}; groups ${groups}; effective ${r.effective} (${r.rule})\n`);
    }
    for (const c of e.verdict.checks) io.out(`check ${c.check}: ${c.allow ? 'allow' : 'deny'} (${c.reason})\n`);
    if (e.verdict.message) io.out(`${e.verdict.message}\n`);
  },
};
