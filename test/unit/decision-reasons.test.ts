import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { decide, type DecisionInput, type GrantFacts } from '../../src/authz/decide.js';
import type { Need, Permission } from '../../src/authz/types.js';
import { ERROR_STATUS, type ErrorCode } from '../../src/errors.js';
import { createMetrics, type ReasonLabel } from '../../src/metrics/registry.js';
import { PERMISSIONS } from '../../src/resources/permissions.js';
import { REASON_NAMES, REASON_SPECS, type Reason } from '../../src/resources/reasons.js';

/*
 * The decision reasons are one closed set (src/resources/reasons.ts): every one reaches the metrics
 * as its own label, docs/operations.md lists each with what it decides, and the reasons decide()
 * gives are the ones the set says it gives, deciding what the set says they decide.
 */

const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

async function reasonLabels(reasons: readonly ReasonLabel[]): Promise<Set<string>> {
  const registry = new Registry();
  const metrics = createMetrics({ version: 'test', registry, defaultMetrics: false });
  for (const reason of reasons) metrics.recordDecision({ decision: 'deny', reason, resourceType: 'none', route: '/api/2.0/mlflow/x' });
  const counter = (await registry.getMetricsAsJSON()).find((m) => m.name === 'flowgate_authz_decisions_total')!;
  return new Set(counter.values.map((v) => String(v.labels.reason)));
}

/** The rows of the decision-reasons table in docs/operations.md: reason → its decision column. */
function documentedReasons(): Map<string, string> {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const start = doc.indexOf('### Decision reasons');
  expect(start).toBeGreaterThan(0);
  const section = doc.slice(start, doc.indexOf('\n## ', start));
  const rows = new Map<string, string>();
  for (const [, reason, decision] of section.matchAll(/^\| `([^`]+)` \| ([^|]+) \|/gm)) rows.set(reason!, decision!.trim());
  return rows;
}

const DOCUMENTED_OUTCOME = { allow: 'allow', deny: 'deny', either: 'allow or deny', none: 'none' } as const;

describe('decision reasons', () => {
  it('each is a metric label of its own, as is each error code a refusal may carry instead', async () => {
    const all: ReasonLabel[] = [...REASON_NAMES, ...ERROR_CODES, 'none'];
    expect(await reasonLabels(all)).toEqual(new Set(all));
  });

  it('docs/operations.md lists every reason and no other, with what it decides', () => {
    const documented = documentedReasons();
    expect([...documented.keys()].sort()).toEqual([...REASON_NAMES].sort());
    for (const reason of REASON_NAMES) expect(documented.get(reason), reason).toBe(DOCUMENTED_OUTCOME[REASON_SPECS[reason].outcome]);
  });

  it('the deployed dashboards and alert tests name only reasons flowgate gives', () => {
    const known = new Set<string>([...REASON_NAMES, ...ERROR_CODES]);
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)]));
    const named = files(new URL('../../deploy', import.meta.url).pathname).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/reason\s*(?:=|!=|=~|!~)\s*\\?"([A-Za-z_-]+)/g)].map((m) => `${m[1]} (${file})`),
    );
    expect(named.filter((entry) => !known.has(entry.split(' ')[0]!))).toEqual([]);
  });

  it("decide() gives exactly the reasons the set calls decide()'s, deciding what the set says", () => {
    const needs: Need[] = ['public', 'authenticated', 'admin', 'create', 'read', 'edit', 'manage'];
    const grants: (Permission | undefined)[] = [undefined, ...PERMISSIONS];
    const facts: GrantFacts[] = [];
    for (const direct of grants)
      for (const group of grants)
        for (const fromPattern of [false, true]) facts.push({ direct, groups: group === undefined ? [] : [group], fromPattern });
    const seen = new Set<Reason>();
    for (const isAdmin of [false, true])
      for (const need of needs)
        for (const createRequiresAdmin of [false, true])
          for (const defaultPermission of PERMISSIONS)
            for (const workspace of [undefined, ...[false, true].flatMap((member) => [false, true].map((manage) => ({ member: member || manage, manage })))])
            for (const f of [[], ...facts.map((one) => [one])]) {
              const input: DecisionInput = { isAdmin, need, facts: f, defaultPermission, createRequiresAdmin, ...(workspace === undefined ? {} : { workspace }) };
              const decision = decide(input);
              seen.add(decision.reason);
              const outcome = REASON_SPECS[decision.reason].outcome;
              if (outcome !== 'either') expect(decision.allow ? 'allow' : 'deny', `${decision.reason} for ${JSON.stringify(input)}`).toBe(outcome);
            }
    const decides = REASON_NAMES.filter((r) => REASON_SPECS[r].where === 'route' || REASON_SPECS[r].where === 'grant');
    expect([...seen].sort()).toEqual([...decides].sort());
  });
});
