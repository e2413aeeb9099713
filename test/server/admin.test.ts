import BetterSqlite3 from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createToken } from '../../server/admin/service';
import { runAdmin } from '../../server/cli/admin-command';
import { settingsFromEnv } from '../../server/settings/settings';
import { openStorage } from '../../server/storage/database';
import { BUILT_ADMIN } from '../support/build';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { freshStorage } from '../support/storage';

/**
 * The admin CLI on the storage of a running server (the server's DATA_DIR for SQLite, its scratch
 * DATABASE_URL for PostgreSQL): most cases run its command in process (`runAdmin`, what the
 * entry runs, opening storage as the entry does); what only a process shows — exit codes, the
 * entry itself, standard input, a process beside a busy server or a held SQLite lock — runs
 * `npm run admin`'s script as a child process.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** In process only: whether storage was opened. */
  opened?: boolean;
}

interface CreatedTeam {
  team: { id: number; name: string; ingest_limit: number | null };
  user: { id: number; name: string; email: string; current_team_id: number | null };
  token: string;
  ingest_key: string;
}

/** Runs the admin command in this process, on `storageEnv` as the entry reads it from the environment. */
async function admin(storageEnv: Record<string, string>, ...args: string[]): Promise<Run> {
  const run: Run = { code: null, stdout: '', stderr: '', opened: false };
  const settings = settingsFromEnv({ DATA_DIR: storageEnv.DATA_DIR, DATABASE_URL: storageEnv.DATABASE_URL });
  try {
    run.code = await runAdmin(args, {
      out: (text) => (run.stdout += `${text}\n`),
      err: (text) => (run.stderr += `${text}\n`),
      stdin: () => '',
      open: () => {
        run.opened = true;
        return openStorage(settings);
      },
    });
  } catch (error) {
    run.code = 1;
    run.stderr += String(error);
  }
  return run;
}

/** Runs the admin CLI (server/cli/admin.ts, compiled once by the global setup) as a child process, with `input` on standard input. */
function adminProcess(storageEnv: Record<string, string>, input: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...storageEnv };
  if (!storageEnv.DATABASE_URL) delete env.DATABASE_URL;
  if (!storageEnv.DATA_DIR) delete env.DATA_DIR;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BUILT_ADMIN, ...args], { cwd: root, env, timeout: 180_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin?.end(input);
  });
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The random part of a credential: what follows its kind prefix. */
function secretOf(credential: string): string {
  return credential.replace(/^[a-z]+_/, '');
}

/** Argument errors are answered before any storage is opened, so they are the same on every engine. */
describe.concurrent('admin CLI arguments', () => {
  it.each([
    ['an unknown command', ['frobnicate'], /Unknown command 'frobnicate'/],
    ['a mistyped command', ['create-teem', '--name', 'Typo', '--email', 'typo@example.com'], /Unknown command 'create-teem'/],
    ['no command', [], /No command given[\s\S]*Usage/],
    ['a stray argument', ['create-token', 'extra', '--email', 'ada@example.com'], /Unexpected argument 'extra'/],
    ['a missing --email', ['create-team', '--name', 'No mail'], /--email is required/],
    ['a missing --name', ['create-team', '--email', 'nameless@example.com'], /--name is required/],
    ['a missing --ingest-limit', ['set-quota', '--team', '1'], /--ingest-limit is required/],
    ['a non-integer --team', ['set-quota', '--team', 'one', '--ingest-limit', '5'], /--team must be a non-negative integer/],
    ['a negative --ingest-limit', ['set-quota', '--team', '1', '--ingest-limit', '-5'], /--ingest-limit/],
    ['an unknown option', ['create-token', '--e-mail', 'ada@example.com'], /--e-mail/],
    ['revoke-token with neither --token nor --email', ['revoke-token'], /--token is required/],
    ['revoke-token with an ingest key', ['revoke-token', '--token', 'esk_abcdef'], /--token is an ingest key[\s\S]*rotate-ingest-key/],
    ['revoke-token with a malformed token', ['revoke-token', '--token', 'not-a-token'], /--token must be an API token/],
    ['revoke-token with --email but not --all', ['revoke-token', '--email', 'ada@example.com'], /add --all/],
    ['revoke-token with --all but not --email', ['revoke-token', '--all'], /--all needs --email/],
    ['revoke-token with --token and --email', ['revoke-token', '--token', 'est_abcdef', '--email', 'ada@example.com', '--all'], /either --token/],
    ['rotate-ingest-key without --team', ['rotate-ingest-key'], /--team is required/],
    ['rotate-ingest-key with a non-integer --team', ['rotate-ingest-key', '--team', 'acme'], /--team must be a non-negative integer/],
    ['a credential as a stray argument', ['revoke-token', 'est_abcdef'], /Unexpected argument \(a credential\?/],
  ])('when it is given %s, then it exits non-zero with a message on stderr, nothing on stdout, and opens no storage', async (_, args, message) => {
    const parent = mkdtempSync(join(tmpdir(), 'admin-test-'));
    const dataDir = join(parent, 'data');
    try {
      const result = await admin({ DATA_DIR: dataDir }, ...(args as string[]));
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message as RegExp);
      expect(result.stderr).toContain('Usage: npm run admin');
      expect(result.stdout).toBe('');
      expect(result.opened).toBe(false);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('when the process is given a mistyped command, then it exits 2 with the message and the usage on stderr, nothing on stdout', async () => {
    const dataDir = join(tmpdir(), `admin-test-unused-${process.pid}`);
    const result = await adminProcess({ DATA_DIR: dataDir }, '', 'create-teem', '--name', 'Typo', '--email', 'typo@example.com');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Unknown command 'create-teem'[\s\S]*Usage: npm run admin/);
    expect(result.stdout).toBe('');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('when the process is given --help, then the usage is printed on stdout and it exits 0', async () => {
    const result = await adminProcess({ DATA_DIR: join(tmpdir(), 'admin-test-unused') }, '', '--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: npm run admin/);
    expect(result.stdout).toMatch(/revoke-token --token/);
    expect(result.stdout).toMatch(/revoke-token --email EMAIL --all/);
    expect(result.stdout).toMatch(/rotate-ingest-key --team ID/);
  });

  it.each([
    ['an ingest key given as --token', ['revoke-token', '--token', 'esk_SecretIngestKey0123456789']],
    ['a malformed --token', ['revoke-token', '--token', 'est_Secret!Token']],
    ['a token given without --token', ['revoke-token', 'est_SecretToken0123456789']],
  ])('when it is given %s, then the error does not repeat the credential', async (_, args) => {
    const result = await admin({ DATA_DIR: join(tmpdir(), 'admin-test-unused') }, ...args);
    expect(result.code).not.toBe(0);
    expect(result.stderr).not.toContain('Secret');
    expect(result.stdout).toBe('');
  });
});

let emails = 0;
const newEmail = (local = 'ada') => `${local}+${process.pid}-${++emails}@example.com`;

describe.each(engines)('admin CLI on %s', (engine) => {
  const server = useServer(engine);
  const run = (...args: string[]) => admin(server().storageEnv, ...args);
  const runProcess = (...args: string[]) => adminProcess(server().storageEnv, '', ...args);
  const get = (path: string, credential: string) =>
    fetch(server().baseUrl + path, { headers: { authorization: `Bearer ${credential}` } }).then(async (response) => ({
      status: response.status,
      body: (await response.json()) as { data: Record<string, unknown> & Array<Record<string, unknown>> },
    }));

  async function createTeam(name: string, email: string): Promise<CreatedTeam> {
    const result = await run('create-team', '--name', name, '--email', email, '--json');
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]) as CreatedTeam;
  }

  /** A team made in-process (faster than a CLI run) for the tests whose subject is another command. */
  async function seedTeam(name: string): Promise<CreatedTeam> {
    const team = await server().newTeam(name);
    const user = (await get('/api/user', team.token)).body.data as unknown as CreatedTeam['user'];
    return { team: { id: team.id, name, ingest_limit: null }, user, token: team.token, ingest_key: team.ingestKey };
  }

  describe('create-team', () => {
    it('when a team is created with --json, then one JSON object has the team, the user named after the e-mail, a token and an ingest key', async () => {
      const email = 'ada@example.com';
      const created = await createTeam('Acme', email);
      expect(created.team).toMatchObject({ id: expect.any(Number), name: 'Acme', ingest_limit: null });
      expect(created.user).toMatchObject({ id: expect.any(Number), name: 'ada', email, current_team_id: created.team.id });
      expect(created.token).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(created.ingest_key).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(created.token).not.toBe(created.ingest_key);

      const user = await get('/api/user', created.token);
      expect(user.status).toBe(200);
      expect(user.body.data).toEqual(created.user);
      const config = await get(`/api/teams/${created.team.id}/config`, created.ingest_key);
      expect(config.status).toBe(200);
      expect(config.body.data).toMatchObject({ team: created.team.id });
    });

    it('when the e-mail is known, then the user is reused and the new team becomes its current team', async () => {
      const email = newEmail('grace');
      const first = await createTeam('First', email);
      const second = await createTeam('Second', email);
      expect(second.user.id).toBe(first.user.id);
      expect(second.user.name).toBe(first.user.name);
      expect(second.team.id).not.toBe(first.team.id);
      expect(second.user.current_team_id).toBe(second.team.id);

      const current = await get('/api/current-team', first.token);
      expect(current.body.data).toMatchObject({ id: second.team.id, name: 'Second' });
      const teams = await get('/api/teams', second.token);
      expect(teams.body.data.map((team) => team.id)).toEqual([first.team.id, second.team.id]);
    });

    it('when it runs with --shell, then it prints one export line whose TEAM, TOKEN and INGEST_KEY work', async () => {
      const shell = await runProcess('create-team', '--name', 'Shell', '--email', newEmail(), '--shell');
      expect(shell.code, shell.stderr).toBe(0);
      expect(shell.stdout).toMatch(/^export TEAM=\d+ TOKEN=est_[A-Za-z0-9_-]+ INGEST_KEY=esk_[A-Za-z0-9_-]+\n$/);
      const values = Object.fromEntries(shell.stdout.trim().replace(/^export /, '').split(' ').map((pair) => pair.split('=') as [string, string]));

      expect((await get(`/api/teams/${values.TEAM}`, values.TOKEN!)).status).toBe(200);
      expect((await get(`/api/teams/${values.TEAM}/config`, values.INGEST_KEY!)).status).toBe(200);
    });

    it('when --shell is given with --json or to a command that makes no credential, then it is a usage error', async () => {
      const both = await run('create-team', '--name', 'Both', '--email', newEmail(), '--shell', '--json');
      const quota = await run('set-quota', '--team', '1', '--ingest-limit', 'none', '--shell');
      expect(both.code).toBe(2);
      expect(both.stderr).toContain('--json or --shell');
      expect(quota.code).toBe(2);
      expect(quota.stderr).toContain('--shell goes with');
    });

    it('when it runs without --json, then it prints the same result readably', async () => {
      const result = await run('create-team', '--name', 'Readable', '--email', newEmail());
      expect(result.code, result.stderr).toBe(0);
      const created = JSON.parse(result.stdout) as CreatedTeam;
      expect(created.team.name).toBe('Readable');
      expect(result.stdout.trim().split('\n').length).toBeGreaterThan(1);
    });
  });

  describe('create-token', () => {
    it('when a token is issued for a known e-mail, then it works beside the earlier one', async () => {
      const email = newEmail();
      const created = await createTeam('Tokens', email);
      const result = await run('create-token', '--email', email, '--json');
      expect(result.code, result.stderr).toBe(0);
      const issued = JSON.parse(result.stdout) as { user: { id: number }; token: string };
      expect(issued.user.id).toBe(created.user.id);
      expect(issued.token).not.toBe(created.token);

      for (const token of [issued.token, created.token]) {
        const user = await get('/api/user', token);
        expect(user.status).toBe(200);
        expect(user.body.data).toMatchObject({ id: created.user.id, email });
      }
    });
  });

  describe('set-role and read-only tokens', () => {
    it("when a new e-mail is made an editor of a team, then its token changes the team; a read-only token of the team's admin is refused a change", async () => {
      const created = await createTeam('Roles', newEmail());
      const editor = newEmail();
      const set = await run('set-role', '--team', String(created.team.id), '--email', editor, '--role', 'editor', '--json');
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse(set.stdout)).toMatchObject({ team: { id: created.team.id }, user: { email: editor }, role: 'editor', previous: null });
      const issued = JSON.parse((await run('create-token', '--email', editor, '--json')).stdout) as { token: string };
      const readOnly = await run('create-token', '--email', created.user.email, '--read-only', '--json');
      expect(JSON.parse(readOnly.stdout)).toMatchObject({ read_only: true });

      const createEvent = (token: string, key: string) =>
        fetch(`${server().baseUrl}/api/teams/${created.team.id}/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ key }) });
      expect((await createEvent(issued.token, 'by_editor')).status).toBe(200);
      expect((await createEvent((JSON.parse(readOnly.stdout) as { token: string }).token, 'by_reader')).status).toBe(403);
    });

    it('when the role is not one of viewer, editor and admin, or --read-only goes with another command, then it is a usage error that opens no storage', async () => {
      for (const args of [
        ['set-role', '--team', '1', '--email', 'a@example.com', '--role', 'owner'],
        ['create-team', '--name', 'X', '--email', 'a@example.com', '--read-only'],
      ]) {
        const result = await run(...args);
        expect(result.code).toBe(2);
        expect(result.opened).toBe(false);
      }
    });
  });

  describe('set-quota', () => {
    it('when a limit of 5 is set, then the sixth ingest is 402; when it is set to none, then ingest is accepted again', async () => {
      const created = await createTeam('Quota', newEmail());
      const limited = await run('set-quota', '--team', String(created.team.id), '--ingest-limit', '5', '--json');
      expect(limited.code, limited.stderr).toBe(0);
      expect(JSON.parse(limited.stdout)).toMatchObject({ id: created.team.id, ingest_limit: 5 });
      expect((await get(`/api/teams/${created.team.id}`, created.token)).body.data.ingest_limit).toBe(5);

      const ingest = (participant: string) =>
        fetch(`${server().baseUrl}/api/teams/${created.team.id}/ingest`, {
          method: 'POST',
          headers: { authorization: `Bearer ${created.ingest_key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ participant }),
        }).then((response) => response.status);
      for (let i = 1; i <= 5; i++) expect(await ingest(`p${i}`)).toBe(200);
      expect(await ingest('p6')).toBe(402);

      const unlimited = await run('set-quota', '--team', String(created.team.id), '--ingest-limit', 'none', '--json');
      expect(unlimited.code, unlimited.stderr).toBe(0);
      expect(JSON.parse(unlimited.stdout)).toMatchObject({ id: created.team.id, ingest_limit: null });
      expect((await get(`/api/teams/${created.team.id}`, created.token)).body.data.ingest_limit).toBeNull();
      expect(await ingest('p7')).toBe(200);
    });
  });

  describe('revoke-token', () => {
    it('when a token is revoked with --json, then it prints the user and 1, not the token, and the token is 401 on the next request', async () => {
      const created = await seedTeam('Revoke');
      const other = await createToken(server().storage.db, created.user.email);
      expect((await get('/api/user', created.token)).status).toBe(200);

      const result = await run('revoke-token', '--token', created.token, '--json');
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0])).toEqual({ user: created.user, revoked: 1 });
      expect(result.stdout + result.stderr).not.toContain(secretOf(created.token));

      const revoked = await fetch(`${server().baseUrl}/api/user`, { headers: { authorization: `Bearer ${created.token}` } });
      expect(revoked.status).toBe(401);
      expect(revoked.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await get('/api/user', other.token)).status, "the user's other token").toBe(200);
      expect((await get(`/api/teams/${created.team.id}/config`, created.ingest_key)).status, "the team's ingest key").toBe(200);
    });

    it('when a revoked token is revoked again, then it exits 0 and says it revoked 0', async () => {
      const created = await seedTeam('Twice');
      expect((await run('revoke-token', '--token', created.token, '--json')).code).toBe(0);
      const again = await run('revoke-token', '--token', created.token, '--json');
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ revoked: 0 });
      expect((await get('/api/user', created.token)).status).toBe(401);
    });

    it("when the token is given as '-', then it is read from standard input", async () => {
      const created = await seedTeam('Stdin');
      const result = await adminProcess(server().storageEnv, `${created.token}\n`, 'revoke-token', '--token', '-', '--json');
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ user: { id: created.user.id }, revoked: 1 });
      expect((await get('/api/user', created.token)).status).toBe(401);
    });

    it('when all tokens of a user are revoked, then each is 401 and other users and the ingest key are untouched', async () => {
      const created = await seedTeam('All');
      const bystander = await seedTeam('Bystander');
      const tokens = [created.token];
      for (let i = 0; i < 2; i++) tokens.push((await createToken(server().storage.db, created.user.email)).token);

      const result = await run('revoke-token', '--email', created.user.email, '--all', '--json');
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ user: created.user, revoked: 3 });
      for (const token of tokens) expect((await get('/api/user', token)).status).toBe(401);
      expect((await get('/api/user', bystander.token)).status).toBe(200);
      expect((await get(`/api/teams/${created.team.id}/config`, created.ingest_key)).status).toBe(200);

      const issued = await createToken(server().storage.db, created.user.email);
      expect((await get('/api/user', issued.token)).status, 'a token issued afterwards').toBe(200);
    });

    it('when the token is unknown, then it exits 1 without repeating it and revokes nothing', async () => {
      const created = await seedTeam('Unknown token');
      const unknown = `est_${'Q'.repeat(43)}`;
      const before = await server().storage.db.selectFrom('api_tokens').select(['id', 'revoked_at']).orderBy('id').execute();
      const result = await run('revoke-token', '--token', unknown);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/No such API token/);
      expect(result.stderr).not.toContain('QQQQ');
      expect(result.stdout).toBe('');
      expect(await server().storage.db.selectFrom('api_tokens').select(['id', 'revoked_at']).orderBy('id').execute()).toEqual(before);
      expect((await get('/api/user', created.token)).status).toBe(200);
    });
  });

  describe('rotate-ingest-key', () => {
    it('when a key is rotated with --json, then it prints the team and a new key; the old key is 401 at once, the new one works', async () => {
      const created = await seedTeam('Rotate');
      const bystander = await seedTeam('Bystander');
      const result = await run('rotate-ingest-key', '--team', String(created.team.id), '--json');
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      const rotated = JSON.parse(lines[0]) as { team: CreatedTeam['team']; ingest_key: string };
      expect(rotated.team).toMatchObject({ id: created.team.id, name: 'Rotate' });
      expect(rotated.ingest_key).toMatch(/^esk_[A-Za-z0-9_-]{43}$/);
      expect(rotated.ingest_key).not.toBe(created.ingest_key);

      const config = `/api/teams/${created.team.id}/config`;
      const old = await fetch(server().baseUrl + config, { headers: { authorization: `Bearer ${created.ingest_key}` } });
      expect(old.status).toBe(401);
      expect(old.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await get(config, rotated.ingest_key)).status).toBe(200);
      expect((await get(`/api/teams/${created.team.id}`, created.token)).status, "the team's token").toBe(200);
      expect((await get(`/api/teams/${bystander.team.id}/config`, bystander.ingest_key)).status, "another team's key").toBe(200);

      const row = await server().storage.db.selectFrom('teams').select('ingest_key_hash').where('id', '=', created.team.id).executeTakeFirstOrThrow();
      expect(row.ingest_key_hash).toBe(sha256(rotated.ingest_key));
    });

    it('when it runs without --json, then it prints the same result readably', async () => {
      const created = await seedTeam('Readable key');
      const result = await run('rotate-ingest-key', '--team', String(created.team.id));
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ team: { id: created.team.id }, ingest_key: expect.stringMatching(/^esk_/) });
      expect(result.stdout.trim().split('\n').length).toBeGreaterThan(1);
    });

    it('when the team is unknown, then it exits 1 with a message and no key', async () => {
      const result = await run('rotate-ingest-key', '--team', '999999', '--json');
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/No team 999999/);
      expect(result.stdout).toBe('');
    });
  });

  describe('errors', () => {
    it.each([
      ['an unknown e-mail', ['create-token', '--email', 'nobody@example.com'], /No user with e-mail nobody@example.com/],
      ['an unknown team', ['set-quota', '--team', '999999', '--ingest-limit', '5'], /No team 999999/],
      ['an unknown e-mail to revoke', ['revoke-token', '--email', 'nobody@example.com', '--all'], /No user with e-mail nobody@example.com/],
    ])('when it is given %s, then it exits non-zero with a message on stderr and nothing on stdout', async (_, args, message) => {
      const result = await run(...(args as string[]));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(message as RegExp);
      expect(result.stdout).toBe('');
    });

    it('when it is given an unknown e-mail, then no token is stored', async () => {
      const before = await server().storage.db.selectFrom('api_tokens').select('id').execute();
      await run('create-token', '--email', 'nobody@example.com');
      const after = await server().storage.db.selectFrom('api_tokens').select('id').execute();
      expect(after).toEqual(before);
    });
  });

  describe('credentials', () => {
    it('when a team is created, then token and ingest key carry at least 128 random bits and no table holds their text', async () => {
      const created = await createTeam('Secrets', newEmail());
      for (const credential of [created.token, created.ingest_key]) {
        expect(secretOf(credential)).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(secretOf(credential).length * 6).toBeGreaterThanOrEqual(128);
      }
      const db = server().storage.db;
      const tokens = await db.selectFrom('api_tokens').selectAll().where('user_id', '=', created.user.id).execute();
      expect(tokens).toHaveLength(1);
      const tables = (await db.introspection.getTables()).map((table) => table.name).filter((name) => !name.startsWith('kysely_'));
      expect(tables).toContain('api_tokens');
      for (const table of tables) {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const rows = JSON.stringify(await (db as any).selectFrom(table).selectAll().execute());
        for (const credential of [created.token, created.ingest_key]) {
          expect(rows, table).not.toContain(credential);
          expect(rows, table).not.toContain(secretOf(credential));
        }
      }
    });
  });

  describe('beside a running server', () => {
    it('when create-team runs while the server is busy writing, then both succeed', async () => {
      const busy = await createTeam('Busy', newEmail());
      let done = false;
      const statuses: number[] = [];
      // Four clients ingesting without pause: the server is in a write transaction most of the time.
      const load = Promise.all(
        [1, 2, 3, 4].map(async (client) => {
          for (let i = 0; !done; i++) {
            const response = await fetch(`${server().baseUrl}/api/teams/${busy.team.id}/ingest`, {
              method: 'POST',
              headers: { authorization: `Bearer ${busy.ingest_key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ participant: `load-${client}-${i}` }),
            });
            statuses.push(response.status);
            await response.arrayBuffer();
          }
        }),
      );
      const runs: Run[] = [];
      for (const round of [1, 2]) {
        runs.push(...(await Promise.all([1, 2, 3].map((i) => runProcess('create-team', '--name', `Concurrent ${round}.${i}`, '--email', newEmail(), '--json')))));
      }
      done = true;
      await load;
      for (const result of runs) expect(result.code, result.stderr).toBe(0);
      expect(statuses.length).toBeGreaterThan(0);
      expect(statuses.filter((status) => status !== 200), 'ingest statuses while the CLI wrote (500 = SQLITE_BUSY in the server)').toEqual([]);
      for (const result of runs) {
        const created = JSON.parse(result.stdout) as CreatedTeam;
        expect((await get('/api/user', created.token)).status).toBe(200);
      }
    }, 300_000); // six CLI processes start while four clients keep the machine busy

    it('when revoke-token and rotate-ingest-key run while clients use those credentials, then they succeed and the credentials stop at once', async () => {
      const busy = await seedTeam('Busy credentials');
      const bystander = await seedTeam('Busy bystander');
      let cliDone = false;
      const seen = { ingest: [] as number[], token: [] as number[], bystander: [] as number[] };
      // Each client calls without pause until it has made one call that began after the CLI was done.
      const loop = async (statuses: number[], call: (i: number) => Promise<Response>) => {
        for (let i = 0, last = false; !last; i++) {
          last = cliDone;
          const response = await call(i);
          statuses.push(response.status);
          await response.arrayBuffer();
        }
      };
      const ingestWith = (team: CreatedTeam, key: string, i: number) =>
        fetch(`${server().baseUrl}/api/teams/${team.team.id}/ingest`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ participant: `busy-${i}` }),
        });
      const load = Promise.all([
        loop(seen.ingest, (i) => ingestWith(busy, busy.ingest_key, i)),
        loop(seen.token, () => fetch(`${server().baseUrl}/api/user`, { headers: { authorization: `Bearer ${busy.token}` } })),
        loop(seen.bystander, (i) => ingestWith(bystander, bystander.ingest_key, i)),
      ]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const [rotated, revoked] = await Promise.all([
        runProcess('rotate-ingest-key', '--team', String(busy.team.id), '--json'),
        runProcess('revoke-token', '--token', busy.token, '--json'),
      ]);
      cliDone = true;
      await load;

      expect(rotated.code, rotated.stderr).toBe(0);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(seen.bystander.length).toBeGreaterThan(0);
      expect(seen.bystander.filter((status) => status !== 200), "the other team's ingest while the CLI wrote").toEqual([]);
      for (const statuses of [seen.ingest, seen.token]) {
        // 200 until the change, 401 from then on: never a 500, never a 200 after a 401.
        const first401 = statuses.indexOf(401);
        expect(statuses.at(-1), 'the call that began after the CLI was done').toBe(401);
        expect(statuses.slice(0, first401).every((status) => status === 200), statuses.join(',')).toBe(true);
        expect(statuses.slice(first401).every((status) => status === 401), statuses.join(',')).toBe(true);
      }
      const key = (JSON.parse(rotated.stdout) as { ingest_key: string }).ingest_key;
      expect((await ingestWith(busy, key, -2)).status).toBe(200);
    });

    it('when two runs create teams for the same new e-mail at once, then both succeed with one user', async () => {
      const email = newEmail('twin');
      const runs = await Promise.all(['Left', 'Right'].map((name) => runProcess('create-team', '--name', name, '--email', email, '--json')));
      for (const result of runs) expect(result.code, result.stderr).toBe(0);
      const [left, right] = runs.map((result) => JSON.parse(result.stdout) as CreatedTeam);
      expect(left.user.id).toBe(right.user.id);
      expect(left.team.id).not.toBe(right.team.id);
      const teams = await get('/api/teams', left.token);
      expect(teams.body.data.map((team) => team.id).sort()).toEqual([left.team.id, right.team.id].sort());
    });
  });
});

describe('admin CLI beside a long SQLite write', () => {
  it('when another process holds the write lock, then the CLI waits SQLITE_BUSY_TIMEOUT_SECONDS for it, and fails with a clear message after', async () => {
    // Arrange: migrated storage, and a second connection holding its write lock
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    try {
      const started = Date.now();
      expect((await adminProcess(storageEnv, '', 'create-team', '--name', 'First', '--email', newEmail(), '--json')).code).toBe(0);
      const oneRunMs = Date.now() - started;
      const holder = new BetterSqlite3(join(storageEnv.DATA_DIR, 'experimentation.sqlite'));
      holder.exec('BEGIN IMMEDIATE');

      // Act: one run that gives up soon; one that, once started, waits about 7 s (beyond the 5 s default) for the lock
      const impatient = await adminProcess({ ...storageEnv, SQLITE_BUSY_TIMEOUT_SECONDS: '0.2' }, '', 'create-team', '--name', 'Impatient', '--email', newEmail(), '--json');
      const patient = adminProcess({ ...storageEnv, SQLITE_BUSY_TIMEOUT_SECONDS: '120' }, '', 'create-team', '--name', 'Patient', '--email', newEmail(), '--json');
      await new Promise((resolve) => setTimeout(resolve, oneRunMs + 7000));
      holder.exec('COMMIT');
      holder.close();
      const waited = await patient;

      // Assert
      expect(impatient.code).toBe(1);
      expect(impatient.stderr).toMatch(/locked|busy/i);
      expect(waited.code, waited.stderr).toBe(0);
      expect((JSON.parse(waited.stdout) as CreatedTeam).team.name).toBe('Patient');
    } finally {
      await cleanup();
    }
  });
});
