import { describe, expect, it } from 'vitest';
import { experimentIdSchema, parseWith, resourceIdSchema } from '../../src/admin/validation.js';
import { FlowgateError } from '../../src/errors.js';

/*
 * The admin API names experiments (grant paths, the lists' look-up) in the spelling the gate decides
 * on: plain decimal. MLflow int()s `01` to experiment 1 and the gate refuses it, so a grant written
 * under `01` would sit beside experiment 1's, decided on by nothing.
 */
const CANONICAL = ['0', '1', '10', '907', '1234567890123456789'];
const NON_CANONICAL = ['01', '00', '007', ' 1', '1 ', '+1', '-1', '1_0', '\u0661', '0x1', '1.0', '1e0', '', '12345678901234567890'];

describe('experiment ids in the admin API', () => {
  it.each(CANONICAL)('takes %j', (id) => {
    expect(experimentIdSchema.safeParse(id).success).toBe(true);
    expect(parseWith(resourceIdSchema('experiment'), id, 'experiment_id in the path')).toBe(id);
  });

  it.each(NON_CANONICAL)('refuses %j with a 400, as the gate does', (id) => {
    expect(experimentIdSchema.safeParse(id).success).toBe(false);
    let thrown: unknown;
    try {
      parseWith(resourceIdSchema('experiment'), id, 'experiment_id in the path');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(FlowgateError);
    expect((thrown as FlowgateError).status).toBe(400);
    expect((thrown as FlowgateError).message).toMatch(/plain decimal/);
  });
});
