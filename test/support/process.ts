import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { BUILT_SERVER } from './build';
import { openStorageAt, type StorageEnv } from './storage';
import { clientsOf, type TestTeam } from './team';

/**
 * The real server as a child process (`node dist/test-build/main.mjs`: server/main.ts compiled
 * once by the global setup — see build.ts — so the child's pid is the server's): for what only a process can show — SIGKILL, SIGTERM, timeouts, storage outages.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface ChildServer {
  child: ChildProcess;
  pid: number;
  port: number;
  baseUrl: string;
  /** Everything the process wrote to stdout and stderr (the last 32 KiB). */
  log(): string;
  /** Resolves when the process has exited; `at` is Date.now() then. */
  exited: Promise<Exit>;
  /** True until the process has exited. */
  running(): boolean;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

const children = new Set<ChildServer>();

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Starts the server on `storageEnv` with `env` added, on a free port, and waits until /api/health answers 200. */
export async function startChild(storageEnv: StorageEnv, env: Record<string, string> = {}, startTimeoutMs = 120_000): Promise<ChildServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [BUILT_SERVER], {
    cwd: root,
    env: {
      ...process.env,
      DATA_DIR: '',
      DATABASE_URL: '',
      ...storageEnv,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      VALIDATE_RESPONSES: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 32 * 1024) output = output.slice(-32 * 1024);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  let exitedYet = false;
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedYet = true;
      resolve({ code, signal, at: Date.now() });
    });
  });
  const server: ChildServer = {
    child,
    pid: child.pid ?? -1,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    log: () => output,
    exited,
    running: () => !exitedYet,
  };
  children.add(server);
  void exited.then(() => children.delete(server));
  await waitForHealth(server, startTimeoutMs);
  return server;
}

async function waitForHealth(server: ChildServer, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!server.running()) throw new Error(`the server exited before it answered:\n${server.log()}`);
    try {
      const response = await fetch(`${server.baseUrl}/api/health`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`the server did not answer /api/health within ${timeoutMs} ms:\n${server.log()}`);
}

/** SIGKILL, and resolves once the process is gone. */
export async function kill(server: ChildServer): Promise<Exit> {
  if (server.running()) server.child.kill('SIGKILL');
  return server.exited;
}

/** SIGTERM; SIGKILL if it is still there after `graceMs`. For clean-up, not for assertions. */
export async function stopChild(server: ChildServer, graceMs = 5000): Promise<void> {
  if (!server.running()) return;
  server.child.kill('SIGTERM');
  const exited = await Promise.race([server.exited, sleep(graceMs).then(() => undefined)]);
  if (!exited) await kill(server);
}

/** Stops every child a test left running (afterAll / afterEach). */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...children].map((server) => stopChild(server)));
}

/**
 * An event `goal` and a running experiment `exp` with variants `control` (control) and
 * `treatment`, 50/50 — so that every ingest enrols its participant.
 */
export async function runningExperiment(baseUrl: string, team: TestTeam, options: { eventType?: 'unique' | 'count' } = {}): Promise<void> {
  const { api } = clientsOf(baseUrl, team);
  const path = { team: team.id };
  const steps = [
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal', type: options.eventType ?? 'count' } }),
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'goal' } }),
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
      params: { path: { ...path, experiment: 'exp' } },
      body: { key: 'control', control: true, traffic: 50 },
    }),
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
      params: { path: { ...path, experiment: 'exp' } },
      body: { key: 'treatment', traffic: 50 },
    }),
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } }),
  ];
  for (const step of steps) {
    if (step.response.status !== 200) throw new Error(`setting up the experiment failed: ${step.response.status} ${JSON.stringify(step.error)}`);
  }
}

export type IngestOutcome = { kind: 'status'; status: number; body: unknown; headers: Headers } | { kind: 'connection-error'; error: string };

/** One ingest with the team's ingest key, by plain fetch: a status, or a connection error. */
export async function ingestOnce(baseUrl: string, team: TestTeam, body: unknown, timeoutMs = 15_000): Promise<IngestOutcome> {
  try {
    const response = await fetch(`${baseUrl}/api/teams/${team.id}/ingest`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${team.ingestKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { kind: 'status', status: response.status, body: parsed, headers: response.headers };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { kind: 'connection-error', error: cause?.code ?? cause?.message ?? String(error) };
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What a test sent for one participant key and what it heard back. */
export interface Sent {
  /** Ingests sent for this key (each with the event `goal`). */
  sent: number;
  /** … answered 200. */
  acked: number;
  /** The variant the 200s named. */
  variant?: string;
  /** True when no ingest of this key may be stored (all were refused with 503, or never reached the app). */
  mustBeAbsent?: boolean;
}

export type Ledger = Map<string, Sent>;

export interface StoredSummary {
  participants: number;
  ackedParticipants: number;
  ackedIngests: number;
  /** Participants stored though no ingest of theirs was acknowledged (in flight at a kill: done completely). */
  unacknowledgedStored: number;
  conversions: number;
  byVariant: Record<string, { participants: number; conversions: number; unique: number }>;
}

/**
 * Proves what is stored against what was acknowledged (`expect`s throughout): every acknowledged
 * ingest is there — participant, enrolment in `exp`, conversions, in the statistics the server
 * answers — and nothing is half there: the counters (variants' participants, conversions, unique
 * conversions, the quota count) equal what the stored rows imply.
 */
export async function expectStored(
  expect: typeof import('vitest').expect,
  server: ChildServer,
  storageEnv: StorageEnv,
  team: TestTeam,
  ledger: Ledger,
): Promise<StoredSummary> {
  const storage = await openStorageAt(storageEnv);
  try {
    const db = storage.db;
    const participants = await db.selectFrom('participants').select(['id', 'key']).where('team_id', '=', team.id).execute();
    const enrolments = await db
      .selectFrom('enrolments')
      .innerJoin('variants', 'variants.id', 'enrolments.variant_id')
      .select(['enrolments.participant_id', 'variants.key as variant'])
      .where('enrolments.team_id', '=', team.id)
      .execute();
    const conversions = await db.selectFrom('conversions').select(['participant_id', 'count']).where('team_id', '=', team.id).execute();
    const usage = await db
      .selectFrom('ingest_usage')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('count'), eb.lit(0)).as('total'))
      .where('team_id', '=', team.id)
      .executeTakeFirstOrThrow();

    const enrolledIn = new Map<number, string[]>();
    for (const e of enrolments) enrolledIn.set(e.participant_id, [...(enrolledIn.get(e.participant_id) ?? []), e.variant]);
    const countOf = new Map<number, number>();
    for (const c of conversions) countOf.set(c.participant_id, (countOf.get(c.participant_id) ?? 0) + Number(c.count));
    const stored = new Map(participants.map((p) => [p.key, p.id]));

    // Every acknowledged ingest is there; nothing refused is; nothing unknown is.
    let ackedParticipants = 0;
    let ackedIngests = 0;
    let unacknowledgedStored = 0;
    for (const [key, sent] of ledger) {
      const id = stored.get(key);
      if (sent.acked > 0) {
        ackedParticipants++;
        ackedIngests += sent.acked;
        expect(id, `acknowledged participant ${key} is stored`).toBeDefined();
        expect(enrolledIn.get(id!), `acknowledged participant ${key} is enrolled where the 200 said`).toEqual([sent.variant]);
        expect(countOf.get(id!) ?? 0, `conversions of ${key}: at least the ${sent.acked} acknowledged`).toBeGreaterThanOrEqual(sent.acked);
      } else if (sent.mustBeAbsent) {
        expect(id, `participant ${key} whose ingest was refused or never reached the app is not stored`).toBeUndefined();
      } else if (id !== undefined) {
        unacknowledgedStored++;
      }
      if (id !== undefined) {
        expect(countOf.get(id) ?? 0, `conversions of ${key}: at most the ${sent.sent} sent`).toBeLessThanOrEqual(sent.sent);
      }
    }
    for (const p of participants) {
      expect(ledger.has(p.key), `stored participant ${p.key} was sent`).toBe(true);
      // Never half: each stored ingest enrolled its participant and counted its event.
      expect(enrolledIn.get(p.id)?.length, `participant ${p.key} has exactly one enrolment`).toBe(1);
      expect(countOf.get(p.id) ?? 0, `participant ${p.key} has its conversion`).toBeGreaterThanOrEqual(1);
    }
    const totalConversions = [...countOf.values()].reduce((a, b) => a + b, 0);
    // One quota count per stored ingest, and one conversion per stored ingest.
    expect(Number(usage.total), 'the quota count equals the stored ingests').toBe(totalConversions);

    // The statistics the restarted server answers: counters equal what the rows imply.
    const { api } = clientsOf(server.baseUrl, team);
    const byVariant: StoredSummary['byVariant'] = {};
    for (const variant of ['control', 'treatment']) {
      const { data, response } = await api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
        params: { path: { team: team.id, experiment: 'exp', variant } },
      });
      expect(response.status).toBe(200);
      const goal = data!.data.events.find((e) => e.event === 'goal')!;
      const inVariant = participants.filter((p) => enrolledIn.get(p.id)?.[0] === variant);
      const expected = {
        participants: inVariant.length,
        conversions: inVariant.reduce((sum, p) => sum + (countOf.get(p.id) ?? 0), 0),
        unique: inVariant.filter((p) => (countOf.get(p.id) ?? 0) > 0).length,
      };
      expect({ participants: data!.data.participants, conversions: goal.conversions, unique: goal.unique_conversions }, `statistics of ${variant}`).toEqual(expected);
      const acked = [...ledger.values()].filter((s) => s.acked > 0 && s.variant === variant);
      expect(data!.data.participants).toBeGreaterThanOrEqual(acked.length);
      expect(goal.conversions).toBeGreaterThanOrEqual(acked.reduce((sum, s) => sum + s.acked, 0));
      byVariant[variant] = expected;
    }
    const teamRead = await api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
    expect(teamRead.data?.data.participants_count).toBe(participants.length);
    expect(Object.values(byVariant).reduce((sum, v) => sum + v.participants, 0)).toBe(participants.length);
    return { participants: participants.length, ackedParticipants, ackedIngests, unacknowledgedStored, conversions: totalConversions, byVariant };
  } finally {
    await storage.close();
  }
}
