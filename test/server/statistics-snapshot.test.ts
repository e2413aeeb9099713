// Statistics read while participants pour in: every read sees one moment of the data, so its
// counters agree (never more unique conversions than participants) and it is never a 500 — with
// one server, and (PostgreSQL) with two server processes on one database.
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { createExperiment, inParallel } from '../support/fixtures';
import { ingestOnce, startChild, stopChild, type ChildServer } from '../support/process';
import { startServer, type TestServer } from '../support/server';

const INGESTS = 1200;
const INGEST_CLIENTS = 8;
const READERS = 2;

interface Reads {
  statuses: number[];
  inconsistent: number;
}

/** Reads the treatment's statistics from `bases` in turn until `until` settles. */
async function readWhile(bases: string[], token: string, path: string, until: Promise<unknown>): Promise<Reads> {
  let done = false;
  void until.finally(() => (done = true));
  const reads: Reads = { statuses: [], inconsistent: 0 };
  await Promise.all(
    Array.from({ length: READERS }, async (_, reader) => {
      for (let i = reader; !done; i++) {
        const response = await fetch(`${bases[i % bases.length]}${path}`, { headers: { authorization: `Bearer ${token}` } });
        reads.statuses.push(response.status);
        const body = (await response.json()) as { data?: { participants: number; events: Array<{ unique_conversions: number }> } };
        if (body.data && body.data.events.some((event) => event.unique_conversions > body.data!.participants)) reads.inconsistent++;
      }
    }),
  );
  return reads;
}

describe.each(engines)('statistics during ingest on %s', (engine) => {
  let server: TestServer | undefined;
  const children: ChildServer[] = [];

  afterAll(async () => {
    for (const child of children) await stopChild(child);
    await server?.close();
  });

  const processes = engine === 'postgres' ? [1, 2] : [1];

  it.each(processes)('when %i server process(es) take new participants with an event, then every statistics read is 200 and consistent', async (count) => {
    server ??= await startServer(engine);
    const team = await server.newTeam();
    await createExperiment(team, 'busy', { event: 'goal' });
    const bases = count === 1 ? [server.baseUrl] : [];
    for (let i = 0; i < count && count > 1; i++) children.push(await startChild(server.storageEnv));
    if (count > 1) bases.push(...children.slice(-count).map((child) => child.baseUrl));

    const ingests = inParallel([...Array(INGESTS).keys()], INGEST_CLIENTS, async (i) => {
      const outcome = await ingestOnce(bases[i % bases.length]!, team, { participant: `p-${count}-${i}`, event: 'goal' });
      return outcome.kind === 'status' ? outcome.status : 0;
    });
    const reads = await readWhile(bases, team.token, `/api/teams/${team.id}/experiments/busy/variants/treatment/statistics`, ingests);
    const statuses = await ingests;

    console.log(`[statistics ${engine}, ${count} process(es)] ${INGESTS} ingests, ${reads.statuses.length} statistics reads: ${reads.statuses.filter((s) => s !== 200).length} not 200, ${reads.inconsistent} inconsistent`);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(reads.statuses.length).toBeGreaterThan(50);
    expect(reads.statuses.filter((status) => status !== 200)).toEqual([]);
    expect(reads.inconsistent).toBe(0);
  });
});
