// `npx tsx bench/erasure.ts [--participants 200000] [--erase 50]`: what deleting a participant costs on PostgreSQL
// as the tables grow, before and after migration 013. On a scratch database migrated to 012 and then to the latest, with
// --participants participants enrolled in three experiments (and an exclusion each for a tenth of them), it deletes
// --erase participants one by one and prints the mean ms a delete — the foreign keys' cascades included.
import { parseArgs } from 'node:util';
import { Migrator, sql } from 'kysely';
import { migrationsOf, openStorage, type Storage } from '../server/storage/database';
import { benchTeamIn } from './lib/in-process';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({ options: { participants: { type: 'string', default: '200000' }, erase: { type: 'string', default: '50' } } });
const participants = Number(values.participants);
const erase = Number(values.erase);

const scratch = await scratchStorage('postgres');
const storage = await openStorage(scratch.options);
try {
  const team = await benchTeamIn(storage, scratch);
  await fill(storage, team.id);
  for (const migration of ['012_counter_keys', '013_participant_keys']) {
    const { error } = await new Migrator({ db: storage.db, provider: { getMigrations: async () => migrationsOf('postgres') } }).migrateTo(migration);
    if (error) throw error;
    await sql`analyze`.execute(storage.db);
    console.log(`${migration}: ${(await meanDeleteMs(storage, team.id)).toFixed(2)} ms a participant deleted (${participants} participants, ${participants * 3} enrolments)`);
  }
} finally {
  await storage.close();
  await scratch.drop();
}

/** Participants enrolled in each running experiment of the team, in SQL: the ingest path is not what is measured. */
async function fill(storage: Storage, teamId: number): Promise<void> {
  await sql`insert into participants (team_id, key, attributes, created_at, updated_at)
    select ${teamId}, 'p-' || n, '{}', now(), now() from generate_series(1, ${participants}) as n`.execute(storage.db);
  await sql`insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at)
    select p.team_id, p.id, x.id, (select v.id from variants v where v.experiment_id = x.id order by v.id limit 1), now()
    from participants p join experiments x on x.team_id = p.team_id and x.status = 'running'
    where p.team_id = ${teamId}`.execute(storage.db);
  await sql`insert into exclusions (team_id, participant_id, experiment_id)
    select p.team_id, p.id, (select id from experiments where team_id = p.team_id order by id limit 1) from participants p
    where p.team_id = ${teamId} and p.id % 10 = 0
    on conflict do nothing`.execute(storage.db);
}

async function meanDeleteMs(storage: Storage, teamId: number): Promise<number> {
  const { rows } = await sql<{ id: number }>`select id from participants where team_id = ${teamId} order by random() limit ${erase}`.execute(storage.db);
  const started = performance.now();
  for (const { id } of rows) await sql`delete from participants where team_id = ${teamId} and id = ${id}`.execute(storage.db);
  return (performance.now() - started) / rows.length;
}
