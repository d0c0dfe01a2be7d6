import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import type { Sql } from '../../src/store/sql.js';
import { sqliteSql } from '../../src/store/sqlite-sql.js';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('the SQLite store behind the async Sql face', () => {
  let sql: Sql;
  const open = () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
    sql = sqliteSql(db);
    return sql;
  };
  const values = async () => (await sql.all<{ v: string }>('SELECT v FROM t ORDER BY id')).map((r) => r.v);
  afterEach(() => sql.close());

  it('keeps a statement made outside an open transaction out of it until it commits', async () => {
    open();
    let release!: () => void;
    const paused = new Promise<void>((r) => (release = r));
    const tx = sql.transaction(async () => {
      await sql.run('INSERT INTO t (v) VALUES (?)', ['inside']);
      await paused;
      await sql.run('INSERT INTO t (v) VALUES (?)', ['inside too']);
    });
    await tick();
    // Neither sees the uncommitted row nor lands inside the transaction.
    const outsideRead = sql.all<{ v: string }>('SELECT v FROM t ORDER BY id');
    const outsideWrite = sql.run('INSERT INTO t (v) VALUES (?)', ['outside']);
    let settled = false;
    void outsideRead.then(() => (settled = true));
    await tick();
    expect(settled).toBe(false);
    release();
    await tx;
    expect((await outsideRead).map((r) => r.v)).toEqual(['inside', 'inside too']);
    expect(await outsideWrite).toBe(1);
    expect(await values()).toEqual(['inside', 'inside too', 'outside']);
  });

  it('rolls back every statement of a transaction that throws, and rethrows', async () => {
    open();
    await sql.run('INSERT INTO t (v) VALUES (?)', ['before']);
    await expect(
      sql.transaction(async () => {
        await sql.run('INSERT INTO t (v) VALUES (?)', ['doomed']);
        await tick();
        await sql.run('UPDATE t SET v = ? WHERE v = ?', ['changed', 'before']);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await values()).toEqual(['before']);
    // The store is usable afterwards: the failed transaction released it.
    await sql.transaction(async () => void (await sql.run('INSERT INTO t (v) VALUES (?)', ['after'])));
    expect(await values()).toEqual(['before', 'after']);
  });

  it('joins a nested transaction to the outer one: the outer rollback undoes the inner writes', async () => {
    open();
    await expect(
      sql.transaction(async () => {
        await sql.run('INSERT INTO t (v) VALUES (?)', ['outer']);
        const inner = await sql.transaction(async () => {
          await sql.run('INSERT INTO t (v) VALUES (?)', ['inner']);
          return (await sql.all<{ v: string }>('SELECT v FROM t ORDER BY id')).map((r) => r.v);
        });
        // The inner one ran in the outer transaction: it saw the outer write.
        expect(inner).toEqual(['outer', 'inner']);
        throw new Error('undo both');
      }),
    ).rejects.toThrow('undo both');
    expect(await values()).toEqual([]);
  });

  it('runs transactions one after the other, never interleaved', async () => {
    open();
    const order: string[] = [];
    const write = (name: string) =>
      sql.transaction(async () => {
        order.push(`${name} start`);
        await sql.run('INSERT INTO t (v) VALUES (?)', [name]);
        await tick();
        order.push(`${name} end`);
      });
    await Promise.all([write('a'), write('b')]);
    expect(order).toEqual(['a start', 'a end', 'b start', 'b end']);
    expect(await values()).toEqual(['a', 'b']);
  });

  it('counts changed rows, RETURNING statements included', async () => {
    open();
    expect(await sql.run('INSERT INTO t (v) VALUES (?), (?)', ['x', 'y'])).toBe(2);
    expect(await sql.get<{ id: number }>('INSERT INTO t (v) VALUES (?) RETURNING id', ['z'])).toEqual({ id: 3 });
    expect(await sql.run('DELETE FROM t WHERE v <> ? RETURNING id', ['z'])).toBe(2);
  });
});
