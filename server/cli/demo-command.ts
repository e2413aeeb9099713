import { createTeam, createToken } from '../admin/service';
import type { Storage } from '../storage/database';
import { commandLineExit, onStorage, readCommandLine, refusing, type Fail } from './command-line';
import { DEMO_EXPERIMENT, simulate } from './demo-simulation';

const usage = `Usage: npm run demo [-- --reset] [--participants N] [--days N]

Makes a demo team with a realistic experiment (${DEMO_EXPERIMENT}: a checkout redesign, judged by
purchases) and plays its last N days (default 14) through the SDK, as an app would: N participants
(default 20 000) arrive day by day, are assigned, put items in the cart and buy. Then it prints
a new API token of the demo user and the pages to open with the service started (npm start).

Run again, it reuses what it made (a new token each time); --reset deletes the demo team and
starts again. Storage: DATABASE_URL (PostgreSQL) or DATA_DIR (SQLite, default ./data), as for
the server. The printed addresses are those of the server running on that SQLite storage (it
records where it listens in DATA_DIR/address), else HOST and PORT (127.0.0.1:3000).`;

export const DEMO_EMAIL = 'demo@example.com';
export const DEMO_TEAM = 'Demo shop';

const options = {
  reset: { type: 'boolean', default: false },
  participants: { type: 'string', default: '20000' },
  days: { type: 'string', default: '14' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

export interface DemoIo {
  out(text: string): void;
  err(text: string): void;
  open(): Promise<Storage>;
  /** Where the service answers, for the printed addresses. */
  baseUrl: string;
  /** Shown as the participants go in; done with `stop`. */
  progress(total: number): { update(done: number): void; stop(): void };
  random(): number;
}

const fail: Fail = refusing(usage);

/** Runs the demo; answers its exit code (0 done, 1 failed, 2 usage error). */
export async function runDemo(args: string[], io: DemoIo): Promise<number> {
  let settings: Settings;
  try {
    settings = settingsOf(args);
  } catch (error) {
    return commandLineExit(error, io);
  }
  return onStorage(io, (storage) => play(storage, settings, io));
}

type Settings = ReturnType<typeof settingsOf>;

/** Reuses the demo team, or (again, with --reset) makes it and plays its experiment; prints where to look. */
async function play(storage: Storage, settings: Settings, io: DemoIo): Promise<void> {
  const existing = await demoTeam(storage);
  if (existing && settings.reset) await storage.db.deleteFrom('teams').where('id', '=', existing.id).execute();
  const reused = existing && !settings.reset ? existing : undefined;
  let team: { id: number; token: string; ingestKey?: string };
  if (reused) {
    if (!(await hasExperiment(storage, reused.id))) throw new Error(`The demo team (${reused.id}) has no ${DEMO_EXPERIMENT}, an earlier run stopped before making it: run npm run demo -- --reset.`);
    team = { id: reused.id, token: (await createToken(storage.db, DEMO_EMAIL)).token };
    io.out(`The demo team is there already (team ${team.id}); --reset plays it again.`);
  } else {
    const created = await createTeam(storage.db, { name: DEMO_TEAM, email: DEMO_EMAIL });
    team = { id: created.team.id, token: created.token, ingestKey: created.ingest_key };
    io.out(`Playing ${settings.participants} participants over ${settings.days} days into team ${team.id} (${DEMO_TEAM})…`);
    const bar = io.progress(settings.participants);
    try {
      await simulate(storage, { id: team.id, token: team.token, ingestKey: created.ingest_key }, { ...settings, progress: bar.update }, io.random);
    } finally {
      bar.stop();
    }
  }
  io.out(closing(io.baseUrl, team));
}

function settingsOf(args: string[]) {
  const { values, positionals } = readCommandLine(usage, fail, options, args);
  if (positionals.length > 0) fail(`Unexpected argument '${positionals[0]}'.`);
  return { reset: values.reset, participants: count('participants', values.participants, 100, 1_000_000), days: count('days', values.days, 1, 365) };
}

function count(name: string, given: string, min: number, max: number): number {
  const value = Number(given);
  if (!/^\d+$/.test(given) || value < min || value > max) fail(`--${name} must be a whole number from ${min} to ${max}.`);
  return value;
}

/** The demo user's current team, if the demo made it. */
async function demoTeam(storage: Storage): Promise<{ id: number } | undefined> {
  return storage.db
    .selectFrom('users')
    .innerJoin('teams', 'teams.id', 'users.current_team_id')
    .select('teams.id')
    .where('users.email', '=', DEMO_EMAIL)
    .where('teams.name', '=', DEMO_TEAM)
    .executeTakeFirst();
}

async function hasExperiment(storage: Storage, teamId: number): Promise<boolean> {
  const row = await storage.db.selectFrom('experiments').select('id').where('team_id', '=', teamId).where('key', '=', DEMO_EXPERIMENT).executeTakeFirst();
  return row !== undefined;
}

function closing(baseUrl: string, team: { id: number; token: string; ingestKey?: string }): string {
  return [
    '',
    `Team:        ${team.id} (${DEMO_TEAM}, user ${DEMO_EMAIL})`,
    `API token:   ${team.token}`,
    ...(team.ingestKey ? [`Ingest key:  ${team.ingestKey}`] : []),
    '',
    'With the service started (npm start), open:',
    `  ${baseUrl}/console#/experiments/${DEMO_EXPERIMENT}   (sign in with the API token)`,
    `  ${baseUrl}/docs`,
  ].join('\n');
}
