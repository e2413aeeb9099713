import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { isStorageUnavailable } from '../../server/storage/unavailable';
import { engines } from '../support/engines';
import { POSTGRES_ADMIN_URL } from '../support/postgres';
import { expectStored, freePort, ingestOnce, runningExperiment, sleep, startChild, stopAllChildren, type ChildServer, type Ledger, type Sent } from '../support/process';
import { clientsOf, createTeamAt, type TestTeam } from '../support/team';
import { freshStorage } from '../support/storage';

const run = promisify(execFile);
const CLIENTS = 16;

type ProblemBody = { type?: string; title?: string; status?: number; detail?: string };

/** Status, headers and body of a plain GET. */
async function get(url: string, credential?: string): Promise<{ status: number; headers: Headers; body: ProblemBody & { data?: unknown }; ms: number }> {
  const started = Date.now();
  const response = await fetch(url, { headers: credential ? { Authorization: `Bearer ${credential}` } : {}, signal: AbortSignal.timeout(15_000) });
  return { status: response.status, headers: response.headers, body: (await response.json()) as ProblemBody, ms: Date.now() - started };
}

function expectUnavailable(outcome: { status: number; headers: Headers; body: unknown }): void {
  expect(outcome.status).toBe(503);
  expect(outcome.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(outcome.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(outcome.body).toMatchObject({ type: 'urn:experimentation:problem:unavailable', title: 'Service Unavailable', status: 503, detail: expect.any(String) });
}

function expectHealthFails(outcome: { status: number; headers: Headers; body: unknown }): void {
  expect(outcome.status).toBe(500);
  expect(outcome.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(outcome.body).toMatchObject({ title: 'Internal Server Error', status: 500 });
}

/**
 * Ingest clients that keep going through an outage: one new participant per request. A 200 must
 * be stored; a 503 must be a problem with Retry-After and must have stored nothing; anything else
 * (500, a dropped connection) is a failure of the test.
 */
function ingestLoad(server: ChildServer, team: TestTeam, clients: number) {
  const ledger: Ledger = new Map();
  const counts = { ok: 0, unavailable: 0 };
  const unexpected: string[] = [];
  let stopped = false;
  const running = Array.from({ length: clients }, async (_, client) => {
    for (let n = 0; !stopped; n++) {
      const key = `c${client}-p${n}`;
      const sent: Sent = { sent: 1, acked: 0 };
      ledger.set(key, sent);
      const outcome = await ingestOnce(server.baseUrl, team, { participant: key, event: 'goal' });
      if (outcome.kind === 'connection-error') {
        unexpected.push(`${key}: ${outcome.error}`);
        sent.mustBeAbsent = true; // not stated by the contract; noted if it happens
        await sleep(50);
      } else if (outcome.status === 200) {
        counts.ok++;
        sent.acked = 1;
        sent.variant = (outcome.body as { data: { assignments: Array<{ variant: string }> } }).data.assignments[0]?.variant;
      } else if (outcome.status === 503) {
        counts.unavailable++;
        sent.mustBeAbsent = true;
        try {
          expectUnavailable({ status: outcome.status, headers: outcome.headers, body: outcome.body });
        } catch (error) {
          unexpected.push(`${key}: ${(error as Error).message}`);
        }
        await sleep(50); // a client honouring Retry-After would wait longer
      } else {
        unexpected.push(`${key}: ${outcome.status} ${JSON.stringify(outcome.body)}`);
      }
    }
  });
  return {
    ledger,
    counts,
    unexpected,
    async stop() {
      stopped = true;
      await Promise.all(running);
    },
  };
}

async function waitUntil(server: ChildServer, what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (!server.running()) throw new Error(`the server exited while waiting for ${what}:\n${server.log()}`);
    if (await condition()) return Date.now() - started;
    await sleep(50);
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms:\n${server.log()}`);
}

/** A PostgreSQL cluster of the test's own under /tmp, which the test can stop and start. */
class ScratchCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
    private readonly asPostgres: boolean,
  ) {}

  static binDir(): string | undefined {
    try {
      const bin = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
      return existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl')) ? bin : undefined;
    } catch {
      return undefined;
    }
  }

  static async create(bin: string): Promise<ScratchCluster> {
    const dir = mkdtempSync('/tmp/experimentation-pg-');
    // PostgreSQL refuses to run as root: then the cluster belongs to the postgres user.
    const asPostgres = process.getuid?.() === 0;
    if (asPostgres) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    const cluster = new ScratchCluster(dir, await freePort(), bin, asPostgres);
    await cluster.pg('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--no-instructions']);
    await cluster.start();
    const admin = new pg.Client({ connectionString: cluster.url('postgres') });
    await admin.connect();
    await admin.query('create database experiments');
    await admin.end();
    return cluster;
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    await this.pg('pg_ctl', ['-D', join(this.dir, 'data'), '-l', join(this.dir, 'log'), '-o', options, '-w', '-t', '30', 'start']);
  }

  /** fast: the server terminates every session (57P01) and stops; new connections are refused. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.pg('pg_ctl', ['-D', join(this.dir, 'data'), '-m', mode, '-w', '-t', '30', 'stop']);
  }

  async destroy(): Promise<void> {
    await this.stop('immediate').catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async pg(tool: string, args: string[]): Promise<void> {
    const command = join(this.bin, tool);
    if (this.asPostgres) await run('runuser', ['-u', 'postgres', '--', command, ...args]);
    else await run(command, args);
  }
}

const postgresBin = ScratchCluster.binDir();
if (engines.includes('postgres') && !postgresBin) {
  if (process.env.CI === 'true') throw new Error('initdb and pg_ctl (pg_config --bindir) are required in CI for the cluster-restart outage test');
  console.warn('\n[notice] initdb/pg_ctl not found (pg_config --bindir): the PostgreSQL cluster-restart outage test is skipped.\n');
}

describe.runIf(engines.includes('postgres'))('storage outage on postgres', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await stopAllChildren();
    for (const cleanup of cleanups) await cleanup().catch(() => {});
  });

  it.runIf(postgresBin !== undefined)(
    `when the database server stops under ${CLIENTS} ingest clients, then health is 500, operations are 503 with Retry-After, the process lives on, and it recovers by itself when the database is back`,
    async () => {
      // Arrange: a cluster of the test's own, the server on it, a team with a running experiment
      const cluster = await ScratchCluster.create(postgresBin!);
      cleanups.push(() => cluster.destroy());
      const server = await startChild({ DATABASE_URL: cluster.url('experiments') }, { DATABASE_CONNECT_TIMEOUT_SECONDS: '1' });
      const team = await createTeamAt(server.baseUrl, { DATABASE_URL: cluster.url('experiments') }, 'Outage');
      await runningExperiment(server.baseUrl, team);
      const load = ingestLoad(server, team, CLIENTS);
      await waitUntil(server, '30 acknowledged ingests', async () => load.counts.ok >= 30, 60_000);

      // Act 1: the database goes away (fast shutdown: sessions terminated, then connections refused)
      const okBefore = load.counts.ok;
      await cluster.stop('fast');
      const outageStarted = Date.now();

      // Assert 1: while it is away
      const health = await get(`${server.baseUrl}/api/health`);
      expectHealthFails(health);
      expect(health.body.type).toBe('urn:experimentation:problem:storage-unavailable');
      expectHealthFails(await get(`${server.baseUrl}/api/health`, team.token));
      const ingest = await ingestOnce(server.baseUrl, team, { participant: 'during-outage', event: 'goal' });
      expect(ingest.kind).toBe('status');
      if (ingest.kind === 'status') expectUnavailable(ingest);
      const user = await get(`${server.baseUrl}/api/user`, team.token);
      expectUnavailable(user);
      expect(user.ms, 'answered at once, not after hanging').toBeLessThan(3000);
      const statistics = await get(`${server.baseUrl}/api/teams/${team.id}/experiments/exp/variants/control/statistics`, team.token);
      expectUnavailable(statistics);
      await sleep(1000); // the load keeps meeting the outage
      expect(server.running(), server.log()).toBe(true);
      const unavailableDuringOutage = load.counts.unavailable;
      expect(unavailableDuringOutage).toBeGreaterThan(0);

      // Act 2: the database is back; the server is not restarted
      await cluster.start();
      const outageMs = Date.now() - outageStarted;
      const recoveryMs = await waitUntil(server, 'health answering 200 again', async () => (await get(`${server.baseUrl}/api/health`)).status === 200, 60_000);
      const okAtRecovery = load.counts.ok;
      await waitUntil(server, '20 more acknowledged ingests', async () => load.counts.ok >= okAtRecovery + 20, 60_000);
      await load.stop();

      // Assert 2: the same process answers everything again; every 200 is stored, no 503 left anything
      expect(server.running()).toBe(true);
      const after = await clientsOf(server.baseUrl, team).ingest.POST('/api/teams/{team}/ingest', {
        params: { path: { team: team.id } },
        body: { participant: 'after-outage', event: 'goal' },
      });
      expect(after.response.status).toBe(200);
      load.ledger.set('after-outage', { sent: 1, acked: 1, variant: after.data!.data.assignments[0].variant });
      load.ledger.set('during-outage', { sent: 1, acked: 0, mustBeAbsent: true });
      expect(load.unexpected, server.log()).toEqual([]);
      expect(server.log()).not.toContain('unhandled error');
      const summary = await expectStored(expect, server, { DATABASE_URL: cluster.url('experiments') }, team, load.ledger);
      expect(summary.unacknowledgedStored).toBe(0);
      console.info(
        `[outage postgres, cluster stopped] ${CLIENTS} clients: ${okBefore} × 200 before, ${load.counts.unavailable} × 503 (none stored), ` +
          `${load.counts.ok - okBefore} × 200 after; outage ${outageMs} ms; healthy again ${recoveryMs} ms after the database started; same pid ${server.pid}`,
      );
    },
    120_000,
  );

  it(`when PostgreSQL terminates the server's connections again and again under ${CLIENTS} ingest clients, then requests hit are 503 (nothing stored), the rest 200, and the pool reconnects by itself`, async () => {
    // Arrange
    const { storageEnv, cleanup } = await freshStorage('postgres');
    cleanups.push(cleanup);
    const server = await startChild(storageEnv, { DATABASE_CONNECT_TIMEOUT_SECONDS: '1' });
    const team = await createTeamAt(server.baseUrl, storageEnv, 'Terminated');
    await runningExperiment(server.baseUrl, team);
    const database = new URL(storageEnv.DATABASE_URL).pathname.slice(1);
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    const load = ingestLoad(server, team, CLIENTS);
    let terminated = 0;
    try {
      await waitUntil(server, '20 acknowledged ingests', async () => load.counts.ok >= 20, 60_000);

      // Act: terminate every connection of the server's database ten times, 150 ms apart
      for (let i = 0; i < 10; i++) {
        const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
        terminated += rowCount ?? 0;
        await sleep(150);
      }
      const okAfterTerminations = load.counts.ok;
      await waitUntil(server, '20 more acknowledged ingests', async () => load.counts.ok >= okAfterTerminations + 20, 60_000);
      await load.stop();
    } finally {
      await load.stop();
      await admin.end();
    }

    // Assert
    expect(server.running(), server.log()).toBe(true);
    expect(terminated).toBeGreaterThan(0);
    expect(load.unexpected, server.log()).toEqual([]);
    expect(server.log()).not.toContain('unhandled error');
    expect((await get(`${server.baseUrl}/api/health`)).status).toBe(200);
    const summary = await expectStored(expect, server, storageEnv, team, load.ledger);
    expect(summary.unacknowledgedStored).toBe(0);
    console.info(
      `[outage postgres, connections terminated] ${terminated} backends terminated; ${load.counts.ok} × 200 (all stored), ${load.counts.unavailable} × 503 (none stored); same pid ${server.pid}`,
    );
  });
});

describe.runIf(engines.includes('sqlite'))('storage outage on sqlite', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await stopAllChildren();
    for (const cleanup of cleanups) await cleanup();
  });

  it('when another process holds the write lock past the busy timeout, then writes are 503 with Retry-After (nothing stored), reads and health still answer, and writes pass once it is released', async () => {
    // Arrange: a busy timeout of 0.2 s, and this process holding SQLite's write lock
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    cleanups.push(cleanup);
    const server = await startChild(storageEnv, { SQLITE_BUSY_TIMEOUT_SECONDS: '0.2' });
    const team = await createTeamAt(server.baseUrl, storageEnv, 'Busy');
    await runningExperiment(server.baseUrl, team);
    const first = await ingestOnce(server.baseUrl, team, { participant: 'before', event: 'goal' });
    expect(first.kind === 'status' && first.status).toBe(200);
    const locker = new BetterSqlite3(join(storageEnv.DATA_DIR, 'experimentation.sqlite'));
    locker.pragma('busy_timeout = 5000');
    locker.exec('begin immediate');

    // Act
    let refused;
    let health;
    let read;
    try {
      refused = await ingestOnce(server.baseUrl, team, { participant: 'locked-out', event: 'goal' });
      health = await get(`${server.baseUrl}/api/health`);
      read = await get(`${server.baseUrl}/api/teams/${team.id}/participants/before`, team.token);
    } finally {
      locker.exec('rollback');
      locker.close();
    }
    const afterwards = await ingestOnce(server.baseUrl, team, { participant: 'after', event: 'goal' });

    // Assert
    expect(refused.kind).toBe('status');
    if (refused.kind === 'status') expectUnavailable(refused);
    expect(health.status).toBe(200);
    expect(read.status).toBe(200);
    expect(afterwards.kind === 'status' && afterwards.status).toBe(200);
    expect(server.running()).toBe(true);
    const variantOf = (outcome: typeof first) => (outcome.kind === 'status' ? (outcome.body as { data: { assignments: Array<{ variant: string }> } }).data.assignments[0].variant : undefined);
    await expectStored(
      expect,
      server,
      storageEnv,
      team,
      new Map<string, Sent>([
        ['before', { sent: 1, acked: 1, variant: variantOf(first) }],
        ['locked-out', { sent: 1, acked: 0, mustBeAbsent: true }],
        ['after', { sent: 1, acked: 1, variant: variantOf(afterwards) }],
      ]),
    );
  });
});

describe('which storage errors count as an outage (503), and which stay 500', () => {
  const coded = (code: string, message = 'failed') => Object.assign(new Error(message), { code });
  it.each([
    ['connection refused', coded('ECONNREFUSED')],
    ['connection reset', coded('ECONNRESET')],
    ['a happy-eyeballs AggregateError of refusals', new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], 'connect failed')],
    ['57P01 admin shutdown (pg_terminate_backend, fast shutdown)', coded('57P01', 'terminating connection due to administrator command')],
    ['57P03 cannot connect now (starting up)', coded('57P03', 'the database system is starting up')],
    ['08006 connection failure', coded('08006')],
    ['08003 connection does not exist', coded('08003')],
    ['53300 too many connections', coded('53300')],
    ['"Connection terminated unexpectedly"', new Error('Connection terminated unexpectedly')],
    ['"Connection terminated due to connection timeout"', new Error('Connection terminated due to connection timeout', { cause: new Error('Connection terminated') })],
    ['pg-pool "timeout exceeded when trying to connect"', new Error('timeout exceeded when trying to connect')],
    ['"Client has encountered a connection error and is not queryable"', new Error('Client has encountered a connection error and is not queryable')],
    ['SQLITE_BUSY', coded('SQLITE_BUSY', 'database is locked')],
    ['SQLITE_IOERR_WRITE', coded('SQLITE_IOERR_WRITE', 'disk I/O error')],
    ['an error caused by a refusal', new Error('wrapped', { cause: coded('ECONNREFUSED') })],
  ])('%s → unavailable', (_what, error) => {
    expect(isStorageUnavailable(error)).toBe(true);
  });

  it.each([
    ['23505 unique violation', coded('23505')],
    ['40P01 deadlock', coded('40P01')],
    ['22P02 invalid input', coded('22P02')],
    ['SQLITE_CONSTRAINT_UNIQUE', coded('SQLITE_CONSTRAINT_UNIQUE')],
    ['a TypeError', new TypeError('x is undefined')],
    ['an AggregateError with one other error', new AggregateError([coded('ECONNREFUSED'), new Error('bug')])],
    ['a string', 'Connection terminated'],
    ['null', null],
  ])('%s → not unavailable (500)', (_what, error) => {
    expect(isStorageUnavailable(error)).toBe(false);
  });
});
