// Builds flowgate's front end into dist/web/ (served under <base>/flowgate/ui/assets/): the
// Manage screens (Preact) and the small menu script added to MLflow's own page.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

await build({
  entryPoints: { app: here('./src/app.tsx'), menu: here('./src/menu.ts'), 'sign-in': here('./src/sign-in.ts') },
  outdir: here('../dist/web'),
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
  loader: { '.css': 'css' },
});
