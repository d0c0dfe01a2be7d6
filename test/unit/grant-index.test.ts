import { describe, expect, it } from 'vitest';
import { GrantIndex } from '../../src/authz/grant-index.js';

describe('the in-memory grant index', () => {
  it('keeps each kind apart: one id under two kinds is two resources', () => {
    const index = new GrantIndex();
    index.add('experiment', '7', 1, 2);
    index.add('registered_model', '7', -3, 4);
    expect(index.get('experiment', '7')).toEqual([1, 2]);
    expect(index.get('registered_model', '7')).toEqual([-3, 4]);
    expect(index.get('prompt', '7')).toBeUndefined();
    expect(index.size).toBe(2);
  });

  it('does not confuse ids that a joined kind-and-id key could (separators inside ids)', () => {
    const index = new GrantIndex();
    index.add('experiment', 'a\u0000b', 1, 1);
    index.add('experiment', 'a', 2, 2);
    index.add('registered_model', 'ws\u001fmodel', 3, 3);
    expect(index.get('experiment', 'a\u0000b')).toEqual([1, 1]);
    expect(index.get('experiment', 'a')).toEqual([2, 2]);
    expect(index.get('experiment', 'b')).toBeUndefined();
    expect(index.get('registered_model', 'ws\u001fmodel')).toEqual([3, 3]);
  });

  it('gathers a resource’s grants in arrival order and counts it once', () => {
    const index = new GrantIndex();
    index.add('experiment', '1', 1, 0);
    index.add('experiment', '1', -2, 3);
    index.add('experiment', '1', 5, 4);
    expect(index.get('experiment', '1')).toEqual([1, 0, -2, 3, 5, 4]);
    expect(index.size).toBe(1);
  });

  it('seal keeps every list as it was', () => {
    const index = new GrantIndex();
    for (let r = 0; r < 50; r++) for (let g = 0; g <= r % 5; g++) index.add(r % 2 ? 'experiment' : 'prompt', String(r), g + 1, g % 5);
    const before = Array.from({ length: 50 }, (_, r) => [...index.get(r % 2 ? 'experiment' : 'prompt', String(r))!]);
    index.seal();
    expect(Array.from({ length: 50 }, (_, r) => index.get(r % 2 ? 'experiment' : 'prompt', String(r)))).toEqual(before);
    expect(index.size).toBe(50);
  });

  it('replace adds, swaps and removes a resource, counting only resources held', () => {
    const index = new GrantIndex();
    index.add('experiment', '1', 1, 1);
    index.replace('experiment', '2', [2, 2]);
    expect(index.size).toBe(2);
    index.replace('experiment', '1', [9, 4]);
    expect(index.get('experiment', '1')).toEqual([9, 4]);
    expect(index.size).toBe(2);
    index.replace('experiment', '1', undefined);
    index.replace('experiment', '404', undefined);
    index.replace('gateway_endpoint', 'x', undefined);
    expect(index.get('experiment', '1')).toBeUndefined();
    expect(index.size).toBe(1);
    index.replace('gateway_endpoint', 'x', [1, 2]);
    expect(index.get('gateway_endpoint', 'x')).toEqual([1, 2]);
    expect(index.size).toBe(2);
  });
});
