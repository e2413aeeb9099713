// Statistics and results read while participants pour in: every read sees one moment of the data,
// so its counters agree (never more unique conversions than participants; the results' daily
// history adds up to its current counts) and it is never a 500 — with one server, and
// (PostgreSQL) with two server processes on one database.
import { afterAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
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

type VariantStatistics = components['schemas']['VariantStatistics'];
type ExperimentResults = components['schemas']['ExperimentResults'];

const statisticsAgree = (data: VariantStatistics) => data.events.every((event) => event.unique_conversions <= data.participants);

/** Every count within its participants, and the last day of the history equal to the current counts. */
function resultsAgree(data: ExperimentResults): boolean {
  const goal = data.events.find((event) => event.goal)!;
  const lastDay = data.history.days.at(-1)?.variants ?? [];
  return (
    data.participants === goal.variants.reduce((sum, v) => sum + v.participants, 0) &&
    data.events.every((event) => event.variants.every((v) => v.statistics.unique_conversions <= v.participants)) &&
    goal.variants.every((v) => {
      const day = lastDay.find((d) => d.variant === v.variant);
      return v.participants === (day?.participants ?? 0) && v.statistics.unique_conversions === (day?.unique_conversions ?? 0);
    })
  );
}

/** Reads `path` from `bases` in turn until `until` settles, counting the reads whose data disagree with themselves. */
async function readWhile<T>(bases: string[], token: string, path: string, until: Promise<unknown>, agrees: (data: T) => boolean): Promise<Reads> {
  let done = false;
  void until.finally(() => (done = true));
  const reads: Reads = { statuses: [], inconsistent: 0 };
  await Promise.all(
    Array.from({ length: READERS }, async (_, reader) => {
      for (let i = reader; !done; i++) {
        const response = await fetch(`${bases[i % bases.length]}${path}`, { headers: { authorization: `Bearer ${token}` } });
        reads.statuses.push(response.status);
        const body = (await response.json()) as { data?: T };
        if (body.data && !agrees(body.data)) reads.inconsistent++;
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
    const [statistics, results] = await Promise.all([
      readWhile(bases, team.token, `/api/teams/${team.id}/experiments/busy/variants/treatment/statistics`, ingests, statisticsAgree),
      readWhile(bases, team.token, `/api/teams/${team.id}/experiments/busy/results`, ingests, resultsAgree),
    ]);
    const statuses = await ingests;

    for (const [name, reads] of [['statistics', statistics], ['results', results]] as const) {
      console.log(`[${name} ${engine}, ${count} process(es)] ${INGESTS} ingests, ${reads.statuses.length} reads: ${reads.statuses.filter((s) => s !== 200).length} not 200, ${reads.inconsistent} inconsistent`);
      expect(reads.statuses.length, name).toBeGreaterThan(50);
      expect(reads.statuses.filter((status) => status !== 200), name).toEqual([]);
      expect(reads.inconsistent, name).toBe(0);
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });
});
