// The large policy store of the bench (d) and (p), and the decision micro-benchmark over it.
import { randomBytes } from 'node:crypto';
import { decide } from '../dist/authz/decide.js';
import { createGrantsRepo } from '../dist/authz/grants-repo.js';
import { createPolicyReader } from '../dist/authz/policy.js';
import { openDatabase } from '../dist/store/database.js';
import { hashToken } from '../dist/tokens/token.js';

/**
 * The big policy store, straight into SQLite before flowgate starts: 10k users (each with a token
 * and in 3 groups), 1k groups, 100k grants (5 per user, 50 per group, over 20k experiments), plus
 * the bench user, whose only way in is a group grant (EDIT on experiments 1-10).
 */
export function seedLargeStore(dbPath, USER) {
  const db = openDatabase(dbPath);
  const now = Date.now();
  const far = now + 300 * 86_400_000;
  const EXPERIMENTS = 20_000;
  db.transaction(() => {
    const user = db.prepare('INSERT INTO users (id, username, display_name, is_admin, is_service_account, created_at) VALUES (?, ?, ?, 0, 0, ?)');
    const group = db.prepare('INSERT INTO groups (id, name, created_at) VALUES (?, ?, ?)');
    const member = db.prepare('INSERT INTO group_members (group_id, user_id) VALUES (?, ?)');
    const token = db.prepare('INSERT INTO access_tokens (user_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)');
    const userGrant = db.prepare(
      "INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('experiment', ?, ?, ?, ?, ?)",
    );
    const groupGrant = db.prepare(
      "INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at) VALUES ('experiment', ?, ?, ?, ?, ?)",
    );
    const PERMS = ['READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS'];
    for (let g = 1; g <= 1000; g++) group.run(g, `group-${g}`, now);
    for (let u = 1; u <= 10_000; u++) {
      user.run(u, `user-${u}`, `User ${u}`, now);
      token.run(u, hashToken(`fgt_seeded_${u}_${randomBytes(8).toString('hex')}`), now, far);
      for (let k = 0; k < 3; k++) member.run(((u * 7 + k * 331) % 1000) + 1, u);
      for (let j = 0; j < 5; j++) userGrant.run(String(((u * 7 + j * 1009) % EXPERIMENTS) + 1), u, PERMS[(u + j) % 4], now, now);
    }
    for (let g = 1; g <= 1000; g++)
      for (let j = 0; j < 50; j++) groupGrant.run(String(((g * 13 + j * 397) % EXPERIMENTS) + 11), g, PERMS[(g + j) % 3], now, now);
    // The bench user and its team.
    user.run(10_001, USER.username, 'Bench user', now);
    token.run(10_001, hashToken(USER.token), now, far);
    group.run(1001, 'bench-team', now);
    member.run(1001, 10_001);
    member.run(5, 10_001);
    member.run(77, 10_001);
    for (let e = 1; e <= 10; e++) groupGrant.run(String(e), 1001, 'EDIT', now, now);
  })();
  const count = (t) => db.prepare(`SELECT count(*) AS n FROM ${t}`).get().n;
  const sizes = { users: count('users'), groups: count('groups'), grants: count('grants'), tokens: count('access_tokens') };
  db.close();
  return sizes;
}

/** Each user's group ids, straight from the store (flowgate's principal cache holds them). */
export async function groupsByUser(sql) {
  const groupsOf = new Map();
  for (const r of await sql.all('SELECT user_id, group_id FROM group_members')) {
    if (!groupsOf.has(r.user_id)) groupsOf.set(r.user_id, []);
    groupsOf.get(r.user_id).push(r.group_id);
  }
  return groupsOf;
}

/** Each case decided once and timed alone: p50, p99 and max in µs, and how many were allowed. */
export function timeEach(cases, decideOne) {
  const t = new Float64Array(cases.length);
  let allowed = 0;
  for (let i = 0; i < cases.length; i++) {
    const s = process.hrtime.bigint();
    if (decideOne(cases[i]).allow) allowed++;
    t[i] = Number(process.hrtime.bigint() - s) / 1e3;
  }
  t.sort();
  return { p50: t[Math.floor(t.length * 0.5)], p99: t[Math.floor(t.length * 0.99)], max: t[t.length - 1], allowed };
}

/** p50/p99 of decide() + the policy reader over the store `sql` holds, cold (each pair's first look-up) and warm. */
export async function decisionMicrobench(sql) {
  const loadStarted = process.hrtime.bigint();
  const policy = createPolicyReader(createGrantsRepo(sql));
  await policy.reloadAll();
  const indexLoadMs = Number(process.hrtime.bigint() - loadStarted) / 1e6;
  // The groups of each user come from the principal cache in flowgate; here straight from the store.
  const groupsOf = await groupsByUser(sql);
  const who = (userId) => ({ userId, groupIds: groupsOf.get(userId) ?? [] });
  const pairs = Array.from({ length: 20_000 }, (_, i) => ({
    who: who(((i * 7919) % 10_000) + 1),
    ref: { kind: 'experiment', id: String(((i * 104_729) % 20_000) + 1) },
  }));
  const one = (p) =>
    decide({ isAdmin: false, need: 'read', facts: [policy.factsFor(p.who, p.ref)], defaultPermission: 'NO_PERMISSIONS', createRequiresAdmin: false });
  for (let i = 0; i < 2000; i++) one({ who: who(10_001), ref: { kind: 'experiment', id: String((i % 10) + 1) } }); // JIT warm-up
  const cold = timeEach(pairs, one);
  const warm = timeEach(pairs, one);
  return { cold, warm, pairs: pairs.length, indexLoadMs };
}
