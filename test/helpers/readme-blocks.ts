import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

/** The text of a `## heading` section of a Markdown file of the repository (README.md by default), up to the next `## `. */
export function markdownSection(heading: string, file = 'README.md'): string {
  const text = readFileSync(resolve(REPO_ROOT, file), 'utf8');
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`${file} has no section "## ${heading}"`);
  const body = text.slice(start + heading.length + 5);
  const end = body.search(/^## /m);
  return end < 0 ? body : body.slice(0, end);
}

/** The contents of the fenced code blocks of one language (```bash, ```python, …) in `markdown`, in order. */
export function codeBlocks(markdown: string, language: string): string[] {
  const fence = new RegExp('^```' + language + '[ \\t]*\\n([\\s\\S]*?)^```[ \\t]*$', 'gm');
  return [...markdown.matchAll(fence)].map((m) => m[1]!);
}
