import { describe, expect, it } from 'vitest';
import type { GrantsRepo, IndexedGrant } from '../../src/authz/grants-repo.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import type { ResourceRef } from '../../src/authz/types.js';
import { BY_RANK } from '../../src/resources/permissions.js';
import { RESOURCE_KINDS } from '../../src/resources/kinds.js';

/**
 * Reads of the store answer out of order (separate pool connections, a slow page): a read started
 * before a full reload holds an older state than the reload, and must not be applied over it; of two
 * reloads, the one started last is the index.
 */
const ANN = { userId: 1, groupIds: [] };
const R = { kind: 'experiment', id: '7' } as ResourceRef;
const granted: IndexedGrant[] = [{ kind: RESOURCE_KINDS.indexOf('experiment'), resource_id: '7', grantee: 1, grant_rank: BY_RANK.indexOf('READ') }];
const revoked: IndexedGrant[] = [];

/** A repository whose every read waits until the test answers it, with the rows it chooses. */
function heldRepo() {
  const pages: Array<(rows: IndexedGrant[]) => void> = [];
  const resources: Array<(rows: IndexedGrant[]) => void> = [];
  const repo = {
    async *pages() {
      yield await new Promise<IndexedGrant[]>((answer) => pages.push(answer));
    },
    onResourceIndexed: () => new Promise<IndexedGrant[]>((answer) => resources.push(answer)),
  } as unknown as GrantsRepo;
  return { repo, pages, resources };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

async function startedWithGrant() {
  const held = heldRepo();
  const policy = createPolicyReader(held.repo);
  const first = policy.reloadAll();
  await tick();
  held.pages.shift()!(granted);
  await first;
  expect(policy.factsFor(ANN, R).direct).toBe('READ');
  return { policy, ...held };
}

describe('reads answering out of order', () => {
  it('a re-read started before a full reload and answered after it does not undo it', async () => {
    const { policy, pages, resources } = await startedWithGrant();
    const reread = policy.changed([R]);
    await tick();
    const reload = policy.reloadAll();
    await tick();
    pages.shift()!(revoked);
    await reload;
    resources.shift()!(granted);
    await reread;
    expect(policy.factsFor(ANN, R).direct).toBeUndefined();
  });

  it('a re-read started before a full reload and answered during it does not undo it', async () => {
    const { policy, pages, resources } = await startedWithGrant();
    const reread = policy.changed([R]);
    await tick();
    const reload = policy.reloadAll();
    await tick();
    resources.shift()!(granted);
    await tick();
    pages.shift()!(revoked);
    await Promise.all([reload, reread]);
    expect(policy.factsFor(ANN, R).direct).toBeUndefined();
  });

  it('a re-read started during a full reload is applied over it', async () => {
    const { policy, pages, resources } = await startedWithGrant();
    const reload = policy.reloadAll();
    await tick();
    const reread = policy.changed([R]);
    await tick();
    resources.shift()!(revoked);
    await tick();
    pages.shift()!(granted);
    await Promise.all([reload, reread]);
    expect(policy.factsFor(ANN, R).direct).toBeUndefined();
  });

  it('of two overlapping reloads, the one started last is kept whichever ends last', async () => {
    const { policy, pages } = await startedWithGrant();
    const older = policy.reloadAll();
    await tick();
    const newer = policy.reloadAll();
    await tick();
    const [olderPage, newerPage] = [pages.shift()!, pages.shift()!];
    newerPage(revoked);
    await newer;
    olderPage(granted);
    await older;
    expect(policy.factsFor(ANN, R).direct).toBeUndefined();
  });

  it('a re-read superseded by a reload resolves once that reload holds the index', async () => {
    const { policy, pages, resources } = await startedWithGrant();
    const reread = policy.changed([R]);
    await tick();
    const reload = policy.reloadAll();
    await tick();
    let settled = false;
    void reread.then(() => (settled = true));
    resources.shift()!(granted);
    await tick();
    expect(settled).toBe(false);
    pages.shift()!(revoked);
    await Promise.all([reload, reread]);
    expect(policy.factsFor(ANN, R).direct).toBeUndefined();
  });
});
