import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createGrantWriter } from '../../src/authz/grant-writer.js';
import { createGrantsRepo, type GrantsRepo } from '../../src/authz/grants-repo.js';
import { FlowgateError } from '../../src/errors.js';
import type { Sql } from '../../src/store/sql.js';
import { freshStore } from '../helpers/test-store.js';

/**
 * The admin routes check that a grant exists, then change it. A grant removed between the two (another
 * request, another replica) must not be reported as changed: the writer answers 404 and writes
 * nothing, audit entry included. On whichever engine the suite runs on.
 */
const ann = { type: 'user', id: 1 } as const;
const experiment = { kind: 'experiment', id: '7' } as const;

let sql: Sql;
let close: () => Promise<void>;
let grants: GrantsRepo;
let writer: ReturnType<typeof createGrantWriter>;
let told: number;

const auditCount = async () => Number((await sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_log'))!.n);

beforeEach(async () => {
  ({ sql, close } = await freshStore());
  await sql.run("INSERT INTO users (username, display_name, created_at) VALUES ('ann', 'Ann', 0)");
  grants = createGrantsRepo(sql);
  told = 0;
  writer = createGrantWriter({ sql, grants, audit: createAuditLog(sql), grantsChanged: async () => void told++ });
});

afterEach(async () => {
  await close();
});

describe('a grant gone between the check and the write', () => {
  it('update and remove of a grant that is there change it, audited', async () => {
    await grants.insert(ann, experiment.kind, experiment.id, 'READ');
    await writer.update('admin', { grantee: ann, name: 'ann' }, experiment, 'READ', 'EDIT');
    expect(await grants.get(ann, experiment.kind, experiment.id)).toBe('EDIT');
    await writer.remove('admin', { grantee: ann, name: 'ann' }, experiment, 'EDIT');
    expect(await grants.get(ann, experiment.kind, experiment.id)).toBeUndefined();
    expect(await auditCount()).toBe(2);
  });

  it('update answers 404 and writes nothing', async () => {
    const error = await writer.update('admin', { grantee: ann, name: 'ann' }, experiment, 'READ', 'EDIT').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowgateError);
    expect(error).toMatchObject({ status: 404, code: 'RESOURCE_DOES_NOT_EXIST' });
    expect(await grants.get(ann, experiment.kind, experiment.id)).toBeUndefined();
    expect(await auditCount()).toBe(0);
    expect(told).toBe(0);
  });

  it('remove answers 404 and writes nothing', async () => {
    const error = await writer.remove('admin', { grantee: ann, name: 'ann' }, experiment, 'READ').catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 404, code: 'RESOURCE_DOES_NOT_EXIST' });
    expect(await auditCount()).toBe(0);
    expect(told).toBe(0);
  });
});
