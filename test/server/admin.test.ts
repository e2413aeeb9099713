import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { engines, useServer } from '../support/engines';

/**
 * The admin CLI as operators run it: a child process on the storage of a running server
 * (the server's DATA_DIR for SQLite, its scratch DATABASE_URL for PostgreSQL).
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface CreatedTeam {
  team: { id: number; name: string; ingest_limit: number | null };
  user: { id: number; name: string; email: string; current_team_id: number | null };
  token: string;
  ingest_key: string;
}

/** Runs `admin.ts …args` asynchronously (the in-process server keeps serving meanwhile). */
function admin(storageEnv: Record<string, string>, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...storageEnv };
  if (!storageEnv.DATABASE_URL) delete env.DATABASE_URL;
  if (!storageEnv.DATA_DIR) delete env.DATA_DIR;
  return new Promise((resolve) => {
    execFile(tsx, ['server/cli/admin.ts', ...args], { cwd: root, env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

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
  ])('when it is given %s, then it exits non-zero with a message on stderr, nothing on stdout, and opens no storage', async (_, args, message) => {
    const parent = mkdtempSync(join(tmpdir(), 'admin-test-'));
    const dataDir = join(parent, 'data');
    try {
      const result = await admin({ DATA_DIR: dataDir }, ...(args as string[]));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(message as RegExp);
      expect(result.stdout).toBe('');
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('when --help is given, then the usage is printed on stdout and it exits 0', async () => {
    const result = await admin({ DATA_DIR: join(tmpdir(), 'admin-test-unused') }, '--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: npm run admin/);
  });
});

let emails = 0;
const newEmail = (local = 'ada') => `${local}+${process.pid}-${++emails}@example.com`;

describe.each(engines)('admin CLI on %s', (engine) => {
  const server = useServer(engine);
  const run = (...args: string[]) => admin(server().storageEnv, ...args);
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

  describe('errors', () => {
    it.each([
      ['an unknown e-mail', ['create-token', '--email', 'nobody@example.com'], /No user with e-mail nobody@example.com/],
      ['an unknown team', ['set-quota', '--team', '999999', '--ingest-limit', '5'], /No team 999999/],
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
        runs.push(...(await Promise.all([1, 2, 3].map((i) => run('create-team', '--name', `Concurrent ${round}.${i}`, '--email', newEmail(), '--json')))));
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
    });

    it('when two runs create teams for the same new e-mail at once, then both succeed with one user', async () => {
      const email = newEmail('twin');
      const runs = await Promise.all(['Left', 'Right'].map((name) => run('create-team', '--name', name, '--email', email, '--json')));
      for (const result of runs) expect(result.code, result.stderr).toBe(0);
      const [left, right] = runs.map((result) => JSON.parse(result.stdout) as CreatedTeam);
      expect(left.user.id).toBe(right.user.id);
      expect(left.team.id).not.toBe(right.team.id);
      const teams = await get('/api/teams', left.token);
      expect(teams.body.data.map((team) => team.id).sort()).toEqual([left.team.id, right.team.id].sort());
    });
  });
});
