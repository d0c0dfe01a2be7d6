/**
 * The tables of MLflow basic-auth's database in its roles generation (alembic head `f1a2b3c4d5e6`), as
 * the importer reads them: tests append their own rows.
 */
export const BASIC_AUTH_ROLES_TABLES = `
  CREATE TABLE alembic_version_auth (version_num TEXT);
  INSERT INTO alembic_version_auth VALUES ('f1a2b3c4d5e6');
  CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT, password_hash TEXT, is_admin BOOLEAN);
  CREATE TABLE roles (id INTEGER PRIMARY KEY, name TEXT, workspace TEXT, description TEXT);
  CREATE TABLE role_permissions (id INTEGER PRIMARY KEY, role_id INTEGER, resource_type TEXT, resource_pattern TEXT, permission TEXT);
  CREATE TABLE user_role_assignments (id INTEGER PRIMARY KEY, user_id INTEGER, role_id INTEGER);
`;
