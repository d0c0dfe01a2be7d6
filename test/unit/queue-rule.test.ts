import { describe, expect, it } from 'vitest';
import { queueRuleAllows } from '../../src/authz/queue-rule.js';

describe('review-queue rule on top of the experiment permission', () => {
  const users = ['alice', 'bob@example.com'];
  it.each([
    ['member', 'EDIT', 'alice', true],
    ['member', 'MANAGE', 'carol', false], // MLflow: even a manager must assign themselves first
    ['member', 'EDIT', ' Alice ', true], // stored lower-cased; the caller's name is trimmed and lower-cased
    ['member', 'EDIT', 'BOB@example.com', true],
    ['member_or_manage', 'READ', 'alice', true],
    ['member_or_manage', 'READ', 'carol', false],
    ['member_or_manage', 'EDIT', 'carol', false],
    ['member_or_manage', 'MANAGE', 'carol', true],
  ] as const)('%s with %s as %j → %s', (rule, permission, username, allowed) => {
    expect(queueRuleAllows(rule, permission, users, username)).toBe(allowed);
  });
  it('an empty pool admits no one by membership', () => {
    expect(queueRuleAllows('member', 'MANAGE', [], 'alice')).toBe(false);
  });
});
