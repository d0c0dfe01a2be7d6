/**
 * The schema, as an append-only list: a released migration is never edited, only followed by a new
 * one. `PRAGMA user_version` holds the number of the last one applied.
 */
export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'principals, grants, access tokens, audit log',
    sql: `
      CREATE TABLE users (
        id                 INTEGER PRIMARY KEY,
        username           TEXT    NOT NULL UNIQUE,
        display_name       TEXT    NOT NULL,
        is_admin           INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
        is_service_account INTEGER NOT NULL DEFAULT 0 CHECK (is_service_account IN (0, 1)),
        created_at         INTEGER NOT NULL
      );

      CREATE TABLE groups (
        id         INTEGER PRIMARY KEY,
        name       TEXT    NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
      );

      CREATE TABLE group_members (
        group_id INTEGER NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
        user_id  INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        PRIMARY KEY (group_id, user_id)
      ) WITHOUT ROWID;
      CREATE INDEX group_members_by_user ON group_members (user_id, group_id);

      CREATE TABLE grants (
        id            INTEGER PRIMARY KEY,
        resource_kind TEXT    NOT NULL CHECK (resource_kind IN ('experiment', 'registered_model', 'prompt')),
        resource_id   TEXT    NOT NULL,
        user_id       INTEGER REFERENCES users (id) ON DELETE CASCADE,
        group_id      INTEGER REFERENCES groups (id) ON DELETE CASCADE,
        permission    TEXT    NOT NULL CHECK (permission IN ('READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS')),
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        CHECK ((user_id IS NULL) <> (group_id IS NULL))
      );
      CREATE UNIQUE INDEX grants_of_user  ON grants (user_id, resource_kind, resource_id) WHERE user_id IS NOT NULL;
      CREATE UNIQUE INDEX grants_of_group ON grants (group_id, resource_kind, resource_id) WHERE group_id IS NOT NULL;
      CREATE INDEX grants_on_resource ON grants (resource_kind, resource_id);

      CREATE TABLE access_tokens (
        id         INTEGER PRIMARY KEY,
        user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        token_hash TEXT    NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE INDEX access_tokens_by_user ON access_tokens (user_id);

      CREATE TABLE audit_log (
        id        INTEGER PRIMARY KEY,
        at        INTEGER NOT NULL,
        actor     TEXT    NOT NULL,
        action    TEXT    NOT NULL,
        target    TEXT    NOT NULL,
        old_value TEXT,
        new_value TEXT
      );
    `,
  },
  {
    version: 2,
    description: 'browser sessions and pending OIDC logins',
    sql: `
      CREATE TABLE sessions (
        id           INTEGER PRIMARY KEY,
        id_hash      TEXT    NOT NULL UNIQUE,
        user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        csrf_secret  TEXT    NOT NULL,
        created_at   INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL
      );
      CREATE INDEX sessions_by_user ON sessions (user_id);
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);

      CREATE TABLE oidc_pending_logins (
        state_hash    TEXT    PRIMARY KEY,
        binding_hash  TEXT    NOT NULL,
        nonce         TEXT    NOT NULL,
        code_verifier TEXT    NOT NULL,
        return_to     TEXT    NOT NULL,
        expires_at    INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX oidc_pending_logins_by_expiry ON oidc_pending_logins (expires_at);
    `,
  },
  {
    version: 3,
    description: "the ID token of a browser session, sent back as id_token_hint at logout",
    sql: `
      ALTER TABLE sessions ADD COLUMN id_token TEXT;
    `,
  },
  {
    version: 4,
    description: 'a counter every change to users, groups, memberships, grants or tokens bumps (not sessions)',
    sql: `
      CREATE TABLE policy_generation (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        value INTEGER NOT NULL
      );
      INSERT INTO policy_generation (id, value) VALUES (1, 0);
      CREATE TRIGGER users_insert_bumps_generation AFTER INSERT ON users BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER users_update_bumps_generation AFTER UPDATE ON users BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER users_delete_bumps_generation AFTER DELETE ON users BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER groups_insert_bumps_generation AFTER INSERT ON groups BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER groups_update_bumps_generation AFTER UPDATE ON groups BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER groups_delete_bumps_generation AFTER DELETE ON groups BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER group_members_insert_bumps_generation AFTER INSERT ON group_members BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER group_members_update_bumps_generation AFTER UPDATE ON group_members BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER group_members_delete_bumps_generation AFTER DELETE ON group_members BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER grants_insert_bumps_generation AFTER INSERT ON grants BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER grants_update_bumps_generation AFTER UPDATE ON grants BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER grants_delete_bumps_generation AFTER DELETE ON grants BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER access_tokens_insert_bumps_generation AFTER INSERT ON access_tokens BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER access_tokens_update_bumps_generation AFTER UPDATE ON access_tokens BEGIN UPDATE policy_generation SET value = value + 1; END;
      CREATE TRIGGER access_tokens_delete_bumps_generation AFTER DELETE ON access_tokens BEGIN UPDATE policy_generation SET value = value + 1; END;
    `,
  },
  {
    version: 5,
    description: 'which resources had grants change, so other processes re-read just those (cascaded deletes included)',
    sql: `
      CREATE TABLE grant_changes (
        seq           INTEGER PRIMARY KEY AUTOINCREMENT,
        resource_kind TEXT NOT NULL,
        resource_id   TEXT NOT NULL
      );
      CREATE TRIGGER grants_insert_logs_change AFTER INSERT ON grants BEGIN
        INSERT INTO grant_changes (resource_kind, resource_id) VALUES (NEW.resource_kind, NEW.resource_id);
      END;
      CREATE TRIGGER grants_update_logs_change AFTER UPDATE ON grants BEGIN
        INSERT INTO grant_changes (resource_kind, resource_id) VALUES (OLD.resource_kind, OLD.resource_id);
        INSERT INTO grant_changes (resource_kind, resource_id) VALUES (NEW.resource_kind, NEW.resource_id);
      END;
      CREATE TRIGGER grants_delete_logs_change AFTER DELETE ON grants BEGIN
        INSERT INTO grant_changes (resource_kind, resource_id) VALUES (OLD.resource_kind, OLD.resource_id);
      END;
    `,
  },
  {
    version: 6,
    description: 'the key sealing search page tokens when none is configured (made once, shared by every flowgate on the store)',
    sql: `
      CREATE TABLE page_token_key (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        key        BLOB    NOT NULL CHECK (length(key) = 32),
        created_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 7,
    description: 'MLflow mappings a flowgate saw change (experiment names, prompt flags, traces), so every flowgate on the store forgets them',
    sql: `
      CREATE TABLE mapping_changes (
        seq   INTEGER PRIMARY KEY AUTOINCREMENT,
        cache TEXT    NOT NULL CHECK (cache IN ('experiment_names', 'model', 'trace', 'dataset', 'review_queue')),
        key   TEXT    NOT NULL
      );
    `,
  },
  {
    version: 8,
    description: 'named access keys: a person may hold several, each with its own name (the unnamed token stays one per user)',
    sql: `
      ALTER TABLE access_tokens ADD COLUMN name TEXT;
      CREATE UNIQUE INDEX access_tokens_live_name ON access_tokens (user_id, name) WHERE name IS NOT NULL AND revoked_at IS NULL;
    `,
  },
];
