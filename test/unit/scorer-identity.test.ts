import { describe, expect, it } from 'vitest';
import { lookupCall } from '../../src/resources/kinds.js';
import { experimentIdProblem, parseScorerId, scorerId, scorerIdProblem, scorerNameProblem } from '../../src/resources/scorer-identity.js';

describe("a scorer's id, `<experiment_id>/<name>`", () => {
  it.each([
    ['12/helpful', { experimentId: '12', name: 'helpful' }],
    ['0/a judge', { experimentId: '0', name: 'a judge' }],
    // The first `/` splits: a name may hold more.
    ['12/team/a/b', { experimentId: '12', name: 'team/a/b' }],
    ['12/../3/x', { experimentId: '12', name: '../3/x' }],
  ])('%s names experiment and name', (id, identity) => {
    expect(parseScorerId(id)).toEqual(identity);
    expect(scorerId(identity)).toBe(id);
    expect(scorerIdProblem(id)).toBeUndefined();
  });

  it.each(['helpful', '/helpful', '012/helpful', '+12/helpful', ' 12/helpful', '1_2/helpful', '12/', '12/   ', '12/a\u0000b', 'x/helpful'])(
    '%j names no scorer',
    (id) => {
      expect(parseScorerId(id)).toBeUndefined();
      expect(scorerIdProblem(id)).toMatch(/is not a scorer/);
    },
  );

  it("MLflow's rules for names and experiment ids", () => {
    expect(scorerNameProblem('')).toBeDefined();
    expect(scorerNameProblem(' \t')).toBeDefined();
    expect(scorerNameProblem(['a'])).toBeDefined();
    expect(scorerNameProblem('x'.repeat(501))).toBeDefined();
    expect(scorerNameProblem('Helpfulness v2')).toBeUndefined();
    expect(experimentIdProblem('0012')).toBeDefined();
    expect(experimentIdProblem(12)).toBeDefined();
    expect(experimentIdProblem('12')).toBeUndefined();
  });

  it("its existence is MLflow's `scorers/get` with the experiment and the name", () => {
    expect(lookupCall('scorer', '12/team/judge')).toEqual({ path: '/api/3.0/mlflow/scorers/get', query: { experiment_id: '12', name: 'team/judge' } });
    expect(lookupCall('scorer', 'judge')).toBeUndefined();
  });
});
