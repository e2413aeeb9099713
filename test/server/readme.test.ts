// Every shell block of README.md, and those it leads to (the admin CLI in docs/operations.md, the
// kit and the mock in docs/conformance-kit.md), run as a newcomer would paste it — on scratch
// storage, a free port and a scratch project instead of ./data, :3000 and their own — except
// `npm ci` and `npm test` (CI runs both: .ci/run) and the Quickstart (test/server/quickstart.test.ts).
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startChild, stopAllChildren } from '../support/process';
import { createTeamAt } from '../support/team';
import { freshStorage } from '../support/storage';

const root = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const operations = readFileSync(join(root, 'docs/operations.md'), 'utf8');
const kit = readFileSync(join(root, 'docs/conformance-kit.md'), 'utf8');

/** The shell blocks of a markdown text, in order. */
const blocksOf = (text: string): string[] => [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);

/** The shell blocks under a `## heading` of the README (or another document), in order. */
function blocksUnder(heading: string, document = readme): string[] {
  const section = document.split(/^## /m).find((part) => part.startsWith(`${heading}\n`));
  if (!section) throw new Error(`no "## ${heading}"`);
  return blocksOf(section);
}

/** The lines of a block that are commands (comments and blank lines left out), comments after a command cut. */
function commands(block: string): string[] {
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

const bash = (script: string, env: Record<string, string> = {}, cwd = root) =>
  promisify(execFile)('bash', ['-e', '-c', script], { cwd, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 });

describe('the README', () => {
  afterAll(stopAllChildren);

  it('when its shell blocks are listed, then each section has the blocks this file and quickstart.test.ts run', () => {
    const sections = [...readme.matchAll(/^## (.+)$/gm)].map((match) => match[1]!);
    const withBlocks = Object.fromEntries(sections.map((heading) => [heading, blocksUnder(heading).length] as const).filter(([, count]) => count > 0));

    expect(withBlocks).toEqual({ Start: 1, Test: 1, Quickstart: 1, 'The demo': 1, "For the API's consumers": 2 });
    // What it leads to: the admin CLI, the kit and the mock
    expect(readme).toContain('docs/operations.md#the-admin-cli');
    expect(blocksUnder('The admin CLI', operations)).toHaveLength(1);
    expect(blocksOf(kit)).toHaveLength(2);
    expect(commands(blocksUnder('Start')[0]!)).toEqual(['npm ci && npm start']);
    expect(commands(blocksUnder('Test')[0]!)).toEqual(['npm test']);
  });

  it('when `npm start` runs (the Start block after npm ci), then the service answers its health check, docs and changelog', async () => {
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    const port = await freePort();
    const start = commands(blocksUnder('Start')[0]!)[0]!.replace(/^npm ci && /, '');
    const child = spawn('bash', ['-c', `exec ${start}`], { cwd: root, env: { ...process.env, ...storageEnv, PORT: String(port), LOG_LEVEL: 'warn' }, stdio: 'ignore', detached: true });
    try {
      const base = `http://127.0.0.1:${port}`;
      await expect.poll(() => fetch(`${base}/api/health`).then((r) => r.status, () => 0), { timeout: 120_000, interval: 250 }).toBe(200);
      expect((await fetch(`${base}/docs`)).status).toBe(200);
      expect((await fetch(`${base}/changelog`)).status).toBe(200);
      // The demo, run beside it without PORT, prints links to the port the server listens on.
      const { stdout } = await bash('npm run -s demo -- --participants 100 --days 1', storageEnv);
      expect(stdout).toContain(`${base}/docs`);
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      await cleanup();
    }
  }, 180_000);

  it('when the demo block runs, then it plays the demo and prints a token and the pages', async () => {
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    try {
      const { stdout } = await bash(blocksUnder('The demo')[0]!, storageEnv);
      expect(stdout).toMatch(/^API token: +est_/m);
      expect(stdout).toContain('/console#/experiments/checkout_redesign');
    } finally {
      await cleanup();
    }
  }, 180_000);

  it('when each line of the docs\' admin CLI block runs with its placeholders filled in, then each succeeds, in order', async () => {
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    try {
      const lines = commands(blocksUnder('The admin CLI', operations)[0]!);
      expect(lines).toHaveLength(6);
      // One pass over the placeholders: a value filled in (a random token may hold "ID") is never filled in again.
      const fill = (line: string, values: Record<string, string>) =>
        line.replace(/ \[--json(\|--shell)?\]$/, ' --json').replace(/\b(?:NAME|EMAIL|N\|none|TOKEN|ID)\b/g, (placeholder) => values[placeholder] ?? placeholder);
      const outputs: Array<Record<string, any>> = [];
      const values: Record<string, string> = { NAME: 'Acme', EMAIL: 'ada@example.com', 'N|none': '1000' };
      for (const line of lines) {
        if (outputs.length === 1) values.TOKEN = outputs[0]!.token;
        if (outputs.length >= 1) values.ID = String(outputs[0]!.team.id);
        const { stdout } = await bash(fill(line.replace(/^npm run /, 'npm run -s '), values), storageEnv);
        outputs.push(JSON.parse(stdout));
      }
      expect(outputs[0]).toMatchObject({ team: { name: 'Acme' }, user: { email: 'ada@example.com' } });
      expect(outputs[2]).toMatchObject({ revoked: 1 });
    } finally {
      await cleanup();
    }
  }, 180_000);

  it('when the package blocks run, then the tarball packed here installs in a project of its own', async () => {
    const [pack, install] = blocksUnder("For the API's consumers");
    const scratch = mkdtempSync(join(tmpdir(), 'readme-package-'));
    try {
      // Packed into the scratch project, not the repository: a tarball a reader packed here before
      // (the README tells them to) is theirs, and has the same name.
      await bash(pack!.replace('./generated', join(root, 'generated')), {}, scratch);
      const [tarball] = readdirSync(scratch);
      expect(tarball).toMatch(/^experimentation-api-.+\.tgz$/);
      writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'a-consumer', private: true, type: 'module' }));

      await bash(install!, { npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' }, scratch);

      expect(existsSync(join(scratch, 'node_modules/experimentation-api/client.js'))).toBe(true);
      expect(existsSync(join(scratch, 'node_modules/experimentation-api/LICENSE'))).toBe(true);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 300_000);

  it('when the docs\' mock block runs on a free port, then the list answers 200 and Prefer: code=404 answers the documented 404', async () => {
    const [mock] = blocksUnder('The mock', kit);
    const port = String(await freePort());
    const [start, ...curls] = commands(mock!.replaceAll('4010', port));
    const child = spawn('bash', ['-c', `exec ${start}`], { cwd: root, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: 'ignore', detached: true });
    try {
      await expect.poll(() => fetch(`http://127.0.0.1:${port}/api/health`).then((r) => r.status, () => 0), { timeout: 60_000, interval: 250 }).toBe(200);
      const answers = [];
      for (const curl of curls) answers.push(JSON.parse((await bash(curl)).stdout));
      expect(answers[0].data).toEqual(expect.any(Array));
      expect(answers[1]).toMatchObject({ status: 404 });
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
    }
  }, 120_000);

  it('when the docs\' verify block runs against the started service, then every operation conforms and the JUnit report is written', async () => {
    const [verify] = blocksOf(kit);
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    const report = join(root, 'verify-report.xml');
    try {
      const server = await startChild(storageEnv);
      const team = await createTeamAt(server.baseUrl, storageEnv);

      const { stdout } = await bash(verify!.replace('http://127.0.0.1:3000', server.baseUrl), { TOKEN: team.token, INGEST_KEY: team.ingestKey });

      expect(stdout).toMatch(/61 of 61 operations conform/);
      // npm prints the script's command line: the credentials must not be on it.
      expect(stdout).not.toContain(team.token);
      expect(stdout).not.toContain(team.ingestKey);
      expect(readFileSync(report, 'utf8')).toContain('failures="0"');
    } finally {
      rmSync(report, { force: true });
      await stopAllChildren();
      await cleanup();
    }
  }, 300_000);
});
