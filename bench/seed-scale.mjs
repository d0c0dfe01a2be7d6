// A policy store at the scale the Permissions UI is held to: 10k users (every 20th a service account), 1k groups
// of 10 members, 90k user grants and 10k group grants over 1k experiments (ids 1000-1999).
// Shared by bench/ui-pages.mjs and the unit test of the screens' API. Each table is filled by one set-based
// statement (a recursive counter both SQLite and PostgreSQL understand), not one round trip per row.
const counter = (rows) => `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows - 1})`;

export async function seedScale(sql) {
  const t = Date.now();
  await sql.transaction(async () => {
    await sql.run(`INSERT INTO users (username, display_name, is_admin, is_service_account, created_at)
      ${counter(10_000)} SELECT 'scale-user-' || i, 'Scale user ' || i, 0, CASE WHEN i % 20 = 0 THEN 1 ELSE 0 END, ${t} FROM n`);
    await sql.run(`INSERT INTO groups (name, created_at) ${counter(1_000)} SELECT 'scale-group-' || i, ${t} FROM n`);
    await sql.run(`INSERT INTO group_members (group_id, user_id)
      ${counter(10_000)} SELECT g.id, u.id FROM n
      JOIN groups g ON g.name = 'scale-group-' || (n.i % 1000) JOIN users u ON u.username = 'scale-user-' || n.i`);
    await sql.run(`INSERT INTO grants (resource_kind, resource_id, user_id, group_id, permission, created_at, updated_at)
      ${counter(90_000)} SELECT 'experiment', CAST(1000 + n.i / 90 AS TEXT), u.id, NULL, 'READ', ${t}, ${t} FROM n
      JOIN users u ON u.username = 'scale-user-' || (n.i % 10000)`);
    await sql.run(`INSERT INTO grants (resource_kind, resource_id, user_id, group_id, permission, created_at, updated_at)
      ${counter(10_000)} SELECT 'experiment', CAST(1000 + n.i / 10 AS TEXT), NULL, g.id, 'EDIT', ${t}, ${t} FROM n
      JOIN groups g ON g.name = 'scale-group-' || (n.i % 1000)`);
  });
}
