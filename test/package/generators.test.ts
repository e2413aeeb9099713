// The bundled document generates cleanly with the client generators consumers use besides
// openapi-typescript: orval (fetch client) and @hey-api/openapi-ts, at the versions pinned in
// package.json. Clean means: nothing printed but the generator's own banner and progress, no
// name renamed to dodge a clash (hey-api numbers duplicates: `Team2`), and output that
// type-checks under strict TypeScript (a duplicate identifier is an error there).
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = (name: string) => join(root, 'node_modules/.bin', name);
const scratch = mkdtempSync(join(tmpdir(), 'generators-'));
copyFileSync(join(root, 'generated/openapi.json'), join(scratch, 'openapi.json'));
const versionOf = (name: string) => (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

/** What a generator printed, without colours, the npm notice about this machine's settings and the lines every run prints. */
function remarks(output: string, routine: RegExp[]): string[] {
  return output
    .replace(/\x1b\[[0-9;]*m/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !routine.some((pattern) => pattern.test(line)));
}

async function generate(command: string, args: string[], routine: RegExp[]): Promise<string[]> {
  const { stdout, stderr } = await run(bin(command), args, { cwd: scratch, env: { ...process.env, SCARF_ANALYTICS: 'false', NO_COLOR: '1' } });
  return remarks(stdout + stderr, routine);
}

async function typeCheck(folder: string): Promise<string> {
  writeFileSync(
    join(scratch, `tsconfig.${folder}.json`),
    JSON.stringify({
      compilerOptions: { strict: true, module: 'ESNext', moduleResolution: 'Bundler', target: 'ES2022', lib: ['ES2023', 'DOM', 'DOM.Iterable'], skipLibCheck: true, noEmit: true },
      include: [`${folder}/**/*.ts`],
    }),
  );
  try {
    await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--project', join(scratch, `tsconfig.${folder}.json`)], { cwd: scratch });
    return '';
  } catch (error) {
    return (error as { stdout: string }).stdout;
  }
}

describe('other generators on the bundled document', () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it(`when orval ${versionOf('orval')} generates a fetch client, then it says nothing about the document and the client type-checks`, async () => {
    const said = await generate('orval', ['--input', './openapi.json', '--output', './orval/api.ts', '--client', 'fetch', '--mode', 'single'], [
      /^🍻 orval v[\d.]+ - A swagger client generator for typescript$/,
      /^🎉 .* - Your OpenAPI spec has been converted into ready to use orval!$/,
    ]);

    expect(said).toEqual([]);
    const client = readFileSync(join(scratch, 'orval/api.ts'), 'utf8');
    expect(client).toContain('export const ingest = async');
    expect(await typeCheck('orval')).toBe('');
  });

  it(`when @hey-api/openapi-ts ${versionOf('@hey-api/openapi-ts')} generates its fetch SDK, then it says nothing about the document, renames nothing and type-checks`, async () => {
    const said = await generate('openapi-ts', ['--input', './openapi.json', '--output', './heyapi'], [
      /^@hey-api\/openapi-ts v[\d.]+$/,
      /^\[Job 1\] ⏳ Generating from 1 input:$/,
      /^\[Job 1\]\s+\[1\] \.\/openapi\.json$/,
      /^\[Job 1\] ✅ Done! Your output is in \S*heyapi$/,
    ]);

    expect(said).toEqual([]);
    const types = readFileSync(join(scratch, 'heyapi/types.gen.ts'), 'utf8');
    expect(types).toContain('export type IngestOutcome = {');
    expect(types.match(/^export type \w+\d = /gm) ?? []).toEqual([]);
    expect(await typeCheck('heyapi')).toBe('');
  });
});
