import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * On Node 20 (V8 11.3) an object built by spreading another and then given one more property
 * (`{ ...a, b }`, `{ ...a, ...b }`) is allocated in the old generation: on the request path every such
 * object is old-generation garbage, which brings full collections (docs/performance.md, "Old-generation
 * garbage per request"). `Object.assign({}, a, { b })`, `jsonCopy` for a client's JSON, or the fields
 * written out cost nothing there. This keeps the pattern out of the code every request runs.
 */
const ROOT = join(import.meta.dirname, '../..');
const REQUEST_PATH = [
  'src/proxy',
  'src/upstream',
  'src/http',
  'src/workspaces',
  'src/authz/evaluate.ts',
  'src/authz/resolve.ts',
  'src/authz/decide.ts',
  'src/authz/policy.ts',
  'src/authz/pattern-policy.ts',
  'src/authz/mlflow-lookups.ts',
  'src/authz/registered-scorers.ts',
  'src/tokens/verifier.ts',
  'src/principals/principal-cache.ts',
];

function sources(path: string): string[] {
  const full = join(ROOT, path);
  if (full.endsWith('.ts')) return [full];
  return readdirSync(full, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? sources(join(path, d.name)) : d.name.endsWith('.ts') ? [join(full, d.name)] : []));
}

/** Object literals where a spread is followed by anything else, as `file:line`. */
function spreadsThenProperties(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isObjectLiteralExpression(node)) {
      const first = node.properties.findIndex(ts.isSpreadAssignment);
      if (first >= 0 && first < node.properties.length - 1) found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the request path', () => {
  it('finds the pattern it looks for', () => {
    expect(spreadsThenProperties('x.ts', 'const a = { ...b, c: 1 }; const d = { ...e, ...f }; const g = { h, ...i }; const j = { ...k };')).toEqual(['x.ts:1', 'x.ts:1']);
  });

  it('builds no object by spreading another and adding to it', () => {
    const files = REQUEST_PATH.flatMap(sources);
    expect(files.length).toBeGreaterThan(20);
    const found = files.flatMap((f) => spreadsThenProperties(relative(ROOT, f), readFileSync(f, 'utf8')));
    expect(found).toEqual([]);
  });
});
