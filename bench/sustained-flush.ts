// `npx tsx bench/sustained-flush.ts [--engine postgres|sqlite] [--rounds 5] [--batches 200] [--analyze] [--keys]`: whether
// ingest flushes slow down as the tables grow, without HTTP or a load generator in the way. On a scratch database
// with the bench team, it runs --rounds rounds of --batches batches of 100 new participants with an event, one after
// the other, through the ingest service, and prints each round's batches a second and each statement's mean ms a
// batch (those over 2 % of the round). PostgreSQL: also the hot counter tables' updates, HOT updates, dead tuples
// and pages. With --analyze, `analyze` before each round but the first: what autovacuum does when it is on.
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { ingestContexts } from '../server/ingest/context';
import { ingestBatch, ingestion } from '../server/ingest/service';
import { ingestKeyWindowFromEnv } from '../server/settings/settings';
import { openStorage } from '../server/storage/database';
import { benchTeamIn, newParticipants } from './lib/in-process';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({
  options: { engine: { type: 'string', default: 'postgres' }, rounds: { type: 'string', default: '5' }, batches: { type: 'string', default: '200' }, analyze: { type: 'boolean', default: false }, keys: { type: 'boolean', default: false } },
});
const engine = values.engine === 'sqlite' ? 'sqlite' : 'postgres';
const batches = Number(values.batches);
const batch = () => newParticipants(100, values.keys);
const HOT_TABLES = ['variants', 'variant_event_counts', 'daily_variant_counts', 'daily_variant_event_counts', 'ingest_usage'];

const statementMs = new Map<string, number>();
const scratch = await scratchStorage(engine);
const storage = await openStorage({
  ...scratch.options,
  log: (event) => {
    const words = event.query.sql.replace(/\s+/g, ' ').trim().slice(0, 60);
    statementMs.set(words, (statementMs.get(words) ?? 0) + event.queryDurationMillis);
  },
});
try {
  const teamRow = await benchTeamIn(storage, scratch);
  const ingesting = ingestion(storage, ingestContexts(), ingestKeyWindowFromEnv());
  for (let round = 1; round <= Number(values.rounds); round++) {
    if (values.analyze && round > 1) await sql`analyze`.execute(storage.db);
    statementMs.clear();
    const started = performance.now();
    for (let i = 0; i < batches; i++) await ingestBatch(ingesting, teamRow, batch());
    const ms = performance.now() - started;
    console.log(`round ${round}: ${(batches / (ms / 1000)).toFixed(1)} batches/s, ${(ms / batches).toFixed(2)} ms a batch`);
    for (const [words, total] of statementMs) if (total > ms / 50) console.log(`${(total / batches).toFixed(2).padStart(9)} ms  ${words}`);
    if (engine === 'postgres') await printHotTables();
  }
} finally {
  await storage.close();
  await scratch.drop();
}

async function printHotTables(): Promise<void> {
  const { rows } = await sql<{ relname: string; upd: number; hot: number; dead: number; pages: number }>`
    select relname, n_tup_upd as upd, n_tup_hot_upd as hot, n_dead_tup as dead, pg_relation_size(relid) / 8192 as pages
    from pg_stat_user_tables where relname = any(${HOT_TABLES}::text[]) order by relname`.execute(storage.db);
  for (const row of rows) console.log(`           ${row.relname}: ${row.upd} updates, ${row.hot} HOT, ${row.dead} dead tuples, ${row.pages} pages`);
}
