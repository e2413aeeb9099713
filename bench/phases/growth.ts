import { sql } from 'kysely';
import { ingestContexts } from '../../server/ingest/context';
import { ingest, ingestion } from '../../server/ingest/service';
import { ingestKeyWindowFromEnv } from '../../server/settings/settings';
import { openStorage, type Storage } from '../../server/storage/database';
import type { TeamRow } from '../../server/teams/store';
import type { Environment } from '../lib/environment';
import { measure, progress, type Measurement } from '../lib/load';
import type { Engine, Options } from '../lib/options';
import type { ScratchStorage } from '../lib/storage';
import { readSpec } from './reads';

export const SMALL = 1_000;
/** Events per seeded participant: event i goes to participant i mod (events / this). */
export const EVENTS_PER_PARTICIPANT = 4;

export interface GrowthPoint {
  events: number;
  statistics: Measurement;
  config: Measurement;
}

export interface GrowthResult {
  small: GrowthPoint;
  large: GrowthPoint;
  seeding: { eventsPerSecond: number; participants: number; note: string };
}

/**
 * Statistics and config latency after 1 000 and after `--events` recorded events, on the
 * environment's fresh server and storage. Seeding calls the ingest use case in this process,
 * on its own connection: the code that maintains the counters, only without HTTP.
 */
export async function growthPhase(env: Environment, options: Options): Promise<GrowthResult> {
  const { engine } = env;
  try {
    const seeder = await openSeeder(env.scratch);
    const team = await seeder.storage.db.selectFrom('teams').selectAll().where('id', '=', env.team.id).executeTakeFirstOrThrow();
    const measureAt = async (events: number): Promise<GrowthPoint> => {
      // Sequential requests: latency without queueing, so that the two points compare.
      const spec = { connections: 1, duration: options.duration };
      return {
        events,
        statistics: await measure(`growth ${engine} statistics @ ${events.toLocaleString('en-US')} events`, readSpec(env, 'statistics', spec), options),
        config: await measure(`growth ${engine} config @ ${events.toLocaleString('en-US')} events`, readSpec(env, 'config', spec), options),
      };
    };

    const participants = Math.max(SMALL, Math.ceil(options.events / EVENTS_PER_PARTICIPANT));
    await seed(seeder.storage, team, participants, 0, SMALL, engine);
    const small = await measureAt(SMALL);
    const started = performance.now();
    await seed(seeder.storage, team, participants, SMALL, options.events, engine);
    const eventsPerSecond = (options.events - SMALL) / ((performance.now() - started) / 1000);
    await checkRecorded(seeder.storage, team.id, options.events);
    await seeder.storage.close();
    const large = await measureAt(options.events);
    return { small, large, seeding: { eventsPerSecond, participants: Math.min(participants, options.events), note: seeder.note } };
  } finally {
    await env.close();
  }
}

/**
 * The bench's own connection, made faster for seeding only: SQLite without fsync, PostgreSQL
 * without waiting for the WAL flush. The server keeps its durable settings.
 */
async function openSeeder(scratch: ScratchStorage): Promise<{ storage: Storage; note: string }> {
  if (scratch.engine === 'sqlite') {
    const storage = await openStorage(scratch.options);
    await sql`PRAGMA synchronous = OFF`.execute(storage.db);
    return { storage, note: 'seeded through ingest() on the bench connection with PRAGMA synchronous=OFF' };
  }
  const url = new URL(scratch.options.databaseUrl!);
  url.searchParams.set('options', '-c synchronous_commit=off');
  const storage = await openStorage({ ...scratch.options, databaseUrl: url.toString(), poolSize: 4 });
  return { storage, note: `seeded through ingest(), ${SEED_CONCURRENCY.postgres} in flight, with synchronous_commit=off` };
}

/** Every seeded event went through ingest: the team's ingest counter says so. */
async function checkRecorded(storage: Storage, teamId: number, events: number): Promise<void> {
  const { total } = await storage.db
    .selectFrom('ingest_usage')
    .select((eb) => eb.fn.sum<number>('count').as('total'))
    .where('team_id', '=', teamId)
    .executeTakeFirstOrThrow();
  if (Number(total) !== events) throw new Error(`seeded ${events} events but the team's ingest counter says ${total}`);
}

// Ingests in flight at once: ingest commits concurrent units together (group commit), so more in
// flight means fewer, larger transactions.
const SEED_CONCURRENCY: Record<Engine, number> = { sqlite: 128, postgres: 128 };

async function seed(storage: Storage, team: TeamRow, participants: number, from: number, to: number, engine: Engine): Promise<void> {
  let next = from;
  let lastReport = performance.now();
  let reportedAt = from;
  const ingesting = ingestion(storage, ingestContexts(), ingestKeyWindowFromEnv());
  const worker = async () => {
    while (next < to) {
      const i = next++;
      // Mostly the goal event of two experiments, now and then the third's.
      await ingest(ingesting, team, { participant: `seed-${i % participants}`, event: i % 4 === 3 ? 'signup' : 'purchase' });
      const now = performance.now();
      if (now - lastReport > 5000) {
        const rate = (next - reportedAt) / ((now - lastReport) / 1000);
        const left = Math.round((to - next) / rate);
        progress(`growth ${engine}: seeded ${count(next)}/${count(to)} events (${count(Math.round(rate))} events/s, about ${left} s left)`);
        lastReport = now;
        reportedAt = next;
      }
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY[engine] }, worker));
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}
