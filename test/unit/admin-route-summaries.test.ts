import { describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../../src/admin/routes.js';
import { withArticle } from '../../src/resources/kinds.js';

/** A refusal reads "Permission denied: <user> may not <summary, lower-cased>": every summary must fit there. */
describe("admin routes' summaries", () => {
  it('each starts with a verb and takes the right article', () => {
    const summaries = ADMIN_ROUTES.map((r) => r.summary);
    expect(summaries.filter((s) => /^(A|An|The|Every|Each)\b/.test(s))).toEqual([]);
    expect(summaries.filter((s) => /\ba [aeio]/i.test(s) || /\ban [^aeiouAEFHILMNORSX]/.test(s))).toEqual([]);
  });

  it('names a kind with its article', () => {
    expect(['experiment', 'registered model', 'MCP server', 'Skill', 'workspace'].map(withArticle)).toEqual(['an experiment', 'a registered model', 'an MCP server', 'a Skill', 'a workspace']);
  });
});
