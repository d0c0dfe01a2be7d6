import { describe, expect, it } from 'vitest';
import { withScopedTwins } from '../../src/resources/kinds.js';
import { parseSkillId, skillId, skillIdProblem, skillPathOf } from '../../src/resources/skill-identity.js';

/** A Skill's id is MLflow's own key for it: `<name>`, or `@<organization>/<name>`, one id per Skill. */
describe('Skill ids', () => {
  it('round-trip between an identity and its id, the two forms never meeting', () => {
    for (const identity of [
      { organization: '', name: 'reviewer' },
      { organization: 'acme', name: 'reviewer' },
      { organization: 'acme.labs', name: 'code-review-2' },
    ]) {
      const id = skillId(identity);
      expect(parseSkillId(id)).toEqual(identity);
    }
    expect(skillId({ organization: '', name: 'reviewer' })).not.toBe(skillId({ organization: 'acme', name: 'reviewer' }));
    expect(skillPathOf('reviewer')).toBe('/reviewer');
    expect(skillPathOf('@acme/reviewer')).toBe('/@acme/reviewer');
  });

  it('refuses every spelling MLflow would refuse, so no second id names the same Skill', () => {
    for (const id of ['Reviewer', '@Acme/reviewer', '@acme', '@/reviewer', '@acme/', 'acme/reviewer', '@acme/rev/iewer', '@@acme/reviewer', '-reviewer', 'rev--iewer', 'reviewer ', '', '%40acme/reviewer', '@acme..x/reviewer', 'a'.repeat(65)])
      expect(skillIdProblem(id), id).toBeDefined();
    expect(skillIdProblem('a'.repeat(64))).toBeUndefined();
  });

  it("gives the admin API's Skill paths an organization twin, and no other kind's", () => {
    expect(withScopedTwins('/mlflow/permissions/users/:username/skills/:name')).toEqual([
      '/mlflow/permissions/users/:username/skills/:name',
      '/mlflow/permissions/users/:username/skills/@:organization/:name',
    ]);
    expect(withScopedTwins('/mlflow/permissions/skills/:name/groups')).toEqual(['/mlflow/permissions/skills/:name/groups', '/mlflow/permissions/skills/@:organization/:name/groups']);
    expect(withScopedTwins('/mlflow/permissions/users/:username/registered-models/:name')).toHaveLength(1);
    expect(withScopedTwins('/mlflow/permissions/users/:username/skills/:named')).toHaveLength(1);
  });
});
