// `npx tsx bench/wal-per-item.ts [--batches 50] [--warm 50] [--rounds 3]`: how much WAL PostgreSQL
// writes for an ingested item — a new participant with an event in the bench team's three running
// experiments — from the WAL's insert position before and after --batches batches of 100 sent
// through the ingest service in process, after --warm batches, on a scratch database. Nothing else
// should write to the cluster meanwhile (`pg_waldump` between the two positions, which it prints,
// names the records). Run from another checkout (copy the file into its
// bench/) for an old against new figure; WAL is deterministic enough that one run of each shows it.
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { ingestContexts } from '../server/ingest/context';
import { ingestBatch, ingestion } from '../server/ingest/service';
import { ingestKeyWindowFromEnv } from '../server/settings/settings';
import { openStorage } from '../server/storage/database';
import { benchTeamIn, newParticipants } from './lib/in-process';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({
  options: { batches: { type: 'string', default: '50' }, warm: { type: 'string', default: '50' }, rounds: { type: 'string', default: '3' } },
});
const ITEMS = 100;
const batch = () => newParticipants(ITEMS);

const scratch = await scratchStorage('postgres');
const storage = await openStorage(scratch.options);
try {
  const team = await benchTeamIn(storage, scratch);
  const ingesting = ingestion(storage, ingestContexts(), ingestKeyWindowFromEnv());
  for (let i = 0; i < Number(values.warm); i++) await ingestBatch(ingesting, team, batch());
  const position = async () => (await sql<{ lsn: string }>`select pg_current_wal_insert_lsn()::text as lsn`.execute(storage.db)).rows[0]!.lsn;
  for (let round = 1; round <= Number(values.rounds); round++) {
    const before = await position();
    for (let i = 0; i < Number(values.batches); i++) await ingestBatch(ingesting, team, batch());
    const after = await position();
    const { bytes } = (await sql<{ bytes: string }>`select pg_wal_lsn_diff(${after}::pg_lsn, ${before}::pg_lsn)::text as bytes`.execute(storage.db)).rows[0]!;
    console.log(`round ${round}: ${(Number(bytes) / (Number(values.batches) * ITEMS)).toFixed(0)} bytes of WAL an item (${before} → ${after})`);
  }
} finally {
  await storage.close();
  await scratch.drop();
}
