import { afterEach, describe, expect, it } from 'vitest';
import { createDirectory } from '../../src/principals/directory.js';
import type { Sql } from '../../src/store/sql.js';
import { freshStore, storeAt } from '../helpers/test-store.js';

/**
 * Migration 19 records who disabled a user, so the identity provider's SCIM (`active: true` on every
 * profile sync) cannot undo an administrator's disable. A user disabled before it reads as disabled by
 * an administrator (the side SCIM cannot undo), and the store's conditions keep SCIM to its own
 * disables, on the engine the suite runs on (SQLite, or PostgreSQL with FLOWGATE_TEST_STORE=postgres).
 */
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const insertUser = (sql: Sql, name: string, disabledAt: number | null) =>
  sql.run('INSERT INTO users (username, display_name, is_admin, is_service_account, created_at, disabled_at) VALUES (?, ?, 0, 0, 1, ?)', [name, name, disabledAt]);

describe('migration 19: who disabled a user', () => {
  it('a user disabled before it reads as disabled by an administrator, whom SCIM cannot enable; an enabled one as enabled', async () => {
    const old = await storeAt(18);
    closers.push(old.close);
    await insertUser(old.sql, 'held', 5000);
    await insertUser(old.sql, 'free', null);
    const sql = await old.upgrade();
    expect(await sql.all('SELECT username, disabled_by FROM users ORDER BY username')).toEqual([
      { username: 'free', disabled_by: null },
      { username: 'held', disabled_by: 'admin' },
    ]);
    const directory = createDirectory(sql);
    const held = (await directory.userByName('held'))!;
    expect(held).toMatchObject({ disabledAt: 5000, disabledBy: 'admin' });
    expect(await directory.userByName('free')).toMatchObject({ disabledAt: null, disabledBy: null });
    expect(await directory.setDisabled(held.id, false, 'scim')).toBe(false);
    expect(await directory.userById(held.id)).toMatchObject({ disabledAt: 5000, disabledBy: 'admin' });
    expect(await directory.setDisabled(held.id, false, 'admin')).toBe(true);
    expect(await directory.userById(held.id)).toMatchObject({ disabledAt: null, disabledBy: null });
  });

  it('SCIM disables and enables what it disabled; an administrator’s disable takes over SCIM’s (keeping when) and SCIM leaves it; an administrator enables either', async () => {
    const store = await freshStore();
    closers.push(store.close);
    let clock = 100;
    const directory = createDirectory(store.sql, () => clock);
    await insertUser(store.sql, 'u', null);
    const id = (await directory.userByName('u'))!.id;
    const state = async () => {
      const u = (await directory.userById(id))!;
      return { at: u.disabledAt, by: u.disabledBy };
    };

    expect(await directory.setDisabled(id, true, 'scim')).toBe(true);
    expect(await state()).toEqual({ at: 100, by: 'scim' });
    expect(await directory.setDisabled(id, true, 'scim')).toBe(false);
    expect(await directory.setDisabled(id, false, 'scim')).toBe(true);
    expect(await state()).toEqual({ at: null, by: null });

    clock = 200;
    expect(await directory.setDisabled(id, true, 'scim')).toBe(true);
    clock = 300;
    expect(await directory.setDisabled(id, true, 'admin')).toBe(true);
    expect(await state()).toEqual({ at: 200, by: 'admin' });
    expect(await directory.setDisabled(id, true, 'admin')).toBe(false);
    expect(await directory.setDisabled(id, true, 'scim')).toBe(false);
    expect(await directory.setDisabled(id, false, 'scim')).toBe(false);
    expect(await state()).toEqual({ at: 200, by: 'admin' });
    expect(await directory.setDisabled(id, false, 'admin')).toBe(true);
    expect(await state()).toEqual({ at: null, by: null });

    expect(await directory.setDisabled(id, true, 'admin')).toBe(true);
    expect(await state()).toEqual({ at: 300, by: 'admin' });
    expect(await directory.setDisabled(id, false, 'scim')).toBe(false);
    expect(await directory.setDisabled(id, false, 'admin')).toBe(true);
    // An administrator's enable of a user SCIM disabled works too.
    expect(await directory.setDisabled(id, true, 'scim')).toBe(true);
    expect(await directory.setDisabled(id, false, 'admin')).toBe(true);
    expect(await state()).toEqual({ at: null, by: null });
  });

  it('a row an older flowgate disabled after the migration (disabled_by NULL) is an administrator’s', async () => {
    const store = await freshStore();
    closers.push(store.close);
    await insertUser(store.sql, 'legacy', 7);
    const directory = createDirectory(store.sql);
    const u = (await directory.userByName('legacy'))!;
    expect(u).toMatchObject({ disabledAt: 7, disabledBy: 'admin' });
    expect(await directory.setDisabled(u.id, false, 'scim')).toBe(false);
    expect(await directory.setDisabled(u.id, true, 'admin')).toBe(false);
  });
});
