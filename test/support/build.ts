import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

/**
 * The server and the admin CLI compiled to JavaScript once per test run (global setup), so that
 * the tests' child processes start in about half the time `tsx` needs. The same sources bundled
 * (node_modules stay external), two folders deep like server/http/, so that the paths the server
 * resolves from its own location (generated/, dist/docs/, CHANGELOG.md) are the same.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
export const BUILT_SERVER = `${root}dist/test-build/main.mjs`;
export const BUILT_ADMIN = `${root}dist/test-build/admin.mjs`;

export async function buildChildEntries(): Promise<void> {
  await build({
    absWorkingDir: root,
    entryPoints: ['server/main.ts', 'server/cli/admin.ts'],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outdir: 'dist/test-build',
    entryNames: '[name]',
    outExtension: { '.js': '.mjs' },
    logLevel: 'warning',
  });
}
