import { describe, expect, it } from 'vitest';
import { mcpServerNameProblem, mcpServerPathOf } from '../../src/resources/mcp-server-identity.js';

/** MLflow 3.17.2's `validate_mcp_server_name`, case by case: flowgate refuses exactly what it refuses. */
describe("an MCP server's name", () => {
  it.each(['com.example/server-name', 'io.github.user/my_tool.v2', 'a1/b2', 'endpoints/search', 'Com.Example/Tools'])('takes %s', (name) => {
    expect(mcpServerNameProblem(name)).toBeUndefined();
  });

  it.each([
    ['', 'empty'],
    ['tools', 'no namespace'],
    ['a/b/c', 'two slashes'],
    ['/tools', 'empty namespace'],
    ['com.example/', 'empty slug'],
    ['com.example/x', 'a one-character slug'],
    ['-com/tools', 'a namespace starting with a hyphen'],
    ['com_example/tools', 'an underscore in the namespace'],
    ['com.example/tools-', 'a slug ending with a hyphen'],
    ['com.example/versions', 'the reserved slug versions'],
    ['com.example/tags', 'the reserved slug tags'],
    ['com.example/aliases', 'the reserved slug aliases'],
    ['com.example/endpoints', 'the reserved slug endpoints'],
    ['com.example/to%2Fols', 'a percent sign'],
    [`com.example/${'a'.repeat(600)}`, 'over 500 characters'],
  ])('refuses %j (%s)', (name) => {
    expect(mcpServerNameProblem(name)).toMatch(/<reverse-dns namespace>\/<server slug>/);
  });

  it('is refused when it is not a string', () => {
    for (const value of [undefined, null, 42, ['a/b']]) expect(mcpServerNameProblem(value)).toBeDefined();
  });

  it("takes two segments of MLflow's paths, each encoded", () => {
    expect(mcpServerPathOf('com.example/server-name')).toBe('/com.example/server-name');
    expect(mcpServerPathOf('a b/c?d')).toBe('/a%20b/c%3Fd');
  });
});
