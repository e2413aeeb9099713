// `npx tsx bench/deep-pages.ts [--participants 150000] [--rounds 9] [--engines sqlite,postgres]`: what one page of a
// team's participants costs by its depth, through the service the route calls (a page's rows and the list's
// COUNT(*)), on a scratch database holding --participants of them. It prints each page's median time and its ratio
// to page 1 now, in the same run: page 1 and the deepest page a request may ask for now (page 100 at 100 a page,
// items 9 901–10 000), then, with the index in id order dropped, page 1 and the last page as they cost before.
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createTeam } from '../server/admin/service';
import { DEEPEST_ITEM } from '../server/routes/pagination';
import { listParticipants } from '../server/participants/service';
import { openStorage } from '../server/storage/database';
import { findTeam } from '../server/teams/store';
import { scratchStorage } from './lib/storage';
import type { Engine } from './lib/options';

const { values } = parseArgs({
  options: { participants: { type: 'string', default: '150000' }, rounds: { type: 'string', default: '9' }, engines: { type: 'string', default: 'sqlite,postgres' } },
});
const participants = Number(values.participants);
const rounds = Number(values.rounds);
const PER_PAGE = 100;

const median = (times: number[]) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]!;

for (const engine of values.engines.split(',') as Engine[]) {
  const scratch = await scratchStorage(engine);
  const storage = await openStorage(scratch.options);
  try {
    const created = await createTeam(storage.db, { name: 'Deep pages', email: 'deep-pages@example.com' });
    const team = (await findTeam(storage.db, created.team.id))!;
    const at = new Date().toISOString();
    for (let start = 0; start < participants; start += 1000) {
      const rows = Array.from({ length: Math.min(1000, participants - start) }, (_, i) => ({ team_id: team.id, key: `p${start + i}`, notes: null, attributes: '{}', created_at: at, updated_at: at }));
      await storage.db.insertInto('participants').values(rows).execute();
    }
    // The table as autovacuum leaves it in a while: statistics gathered, the visibility map set.
    if (engine === 'postgres') await sql`vacuum analyze participants`.execute(storage.db);
    const time = async (page: number) => {
      const times: number[] = [];
      for (let round = 0; round <= rounds; round++) {
        const started = performance.now();
        await listParticipants(storage.db, team, { page, perPage: PER_PAGE, offset: (page - 1) * PER_PAGE });
        if (round > 0) times.push(performance.now() - started); // round 0 warms the cache
      }
      return median(times);
    };
    const last = Math.ceil(participants / PER_PAGE);
    const deepest = DEEPEST_ITEM / PER_PAGE;
    const figures: Array<[string, number]> = [
      ['now: page 1', await time(1)],
      [`now: page ${deepest}, the deepest`, await time(deepest)],
    ];
    // Before: no index in id order (migration 008), and no depth bound.
    await storage.db.schema.dropIndex('participants_team_id').execute();
    if (engine === 'postgres') await sql`analyze participants`.execute(storage.db);
    figures.push(['before: page 1', await time(1)], [`before: page ${last}, the last`, await time(last)]);
    console.log(`${engine}, ${participants} participants, ${PER_PAGE} a page, median of ${rounds}:`);
    for (const [name, ms] of figures) console.log(`  ${name.padEnd(28)} ${ms.toFixed(1).padStart(7)} ms  ×${(ms / figures[0]![1]).toFixed(1)} of page 1 now`);
  } finally {
    await storage.close();
    await scratch.drop();
  }
}
