// A policy store at the scale the Permissions UI is held to: 10k users (every 20th an admin), 1k groups
// of 10 members, 90k user grants and 10k group grants over 1k experiments (ids 1000-1999).
// Shared by bench/ui-pages.mjs and the unit test of the screens' API.
export async function seedScale(sql) {
  const t = Date.now();
  const user = 'INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES (?, ?, 0, ?, ?)';
  const group = 'INSERT INTO groups (name, created_at) VALUES (?, ?)';
  const member = 'INSERT INTO group_members (group_id, user_id) SELECT g.id, u.id FROM groups g, users u WHERE g.name = ? AND u.username = ?';
  const grant = `INSERT INTO grants (resource_kind, resource_id, user_id, group_id, permission, created_at, updated_at)
       SELECT 'experiment', ?, (SELECT id FROM users WHERE username = ?), NULL, 'READ', ?, ?`;
  const groupGrant = `INSERT INTO grants (resource_kind, resource_id, user_id, group_id, permission, created_at, updated_at)
       SELECT 'experiment', ?, NULL, (SELECT id FROM groups WHERE name = ?), 'EDIT', ?, ?`;
  await sql.transaction(async () => {
    for (let i = 0; i < 10_000; i++) await sql.run(user, [`scale-user-${i}`, `Scale user ${i}`, i % 20 === 0 ? 1 : 0, t]);
    for (let g = 0; g < 1_000; g++) await sql.run(group, [`scale-group-${g}`, t]);
    for (let i = 0; i < 10_000; i++) await sql.run(member, [`scale-group-${i % 1_000}`, `scale-user-${i}`]);
    for (let i = 0; i < 90_000; i++) await sql.run(grant, [String(1000 + Math.floor(i / 90)), `scale-user-${i % 10_000}`, t, t]);
    for (let i = 0; i < 10_000; i++) await sql.run(groupGrant, [String(1000 + Math.floor(i / 10)), `scale-group-${i % 1_000}`, t, t]);
  });
}
