// Builds the console (console/, served at /console) into dist/console/: one ES module with Preact
// and the package's typed client bundled in, minified, and its stylesheet. Run by `npm start`
// (prestart) and `npm test`, and by the tests' global setup; about 0.2 s.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');

export async function buildConsole(): Promise<void> {
  const outdir = join(root, 'dist', 'console');
  mkdirSync(outdir, { recursive: true });
  await build({
    absWorkingDir: root,
    entryPoints: ['console/main.tsx'],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outfile: join(outdir, 'console.js'),
    logLevel: 'warning',
  });
  for (const file of ['console.css', 'index.html', 'icon.svg']) copyFileSync(join(root, 'console', file), join(outdir, file));
}

if (import.meta.url === `file://${process.argv[1]}`) await buildConsole();
