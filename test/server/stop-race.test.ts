// A stop freezes its experiment: ingests still in flight when the stop is answered 200 either
// committed before it (and are counted) or find the experiment stopped — so the statistics read
// right after the 200 never change again, and no enrolment is dated after `stopped_at`. On both
// engines, and on PostgreSQL with two server processes taking the ingests.
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { createExperiment, inParallel } from '../support/fixtures';
import { ingestOnce, sleep, startChild, stopChild, type ChildServer } from '../support/process';
import { startServer, type TestServer } from '../support/server';

const ROUNDS = 6;
const INGESTS = 300;

describe.each(engines)('stopping under ingest on %s', (engine) => {
  let server: TestServer | undefined;
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const child of children) await stopChild(child);
    await server?.close();
  });

  it(`when experiments are stopped while participants pour in (${ROUNDS} rounds), then nothing enrols after a stop`, async () => {
    server = await startServer(engine);
    if (engine === 'postgres') children.push(await startChild(server.storageEnv), await startChild(server.storageEnv));
    const bases = engine === 'postgres' ? children.map((child) => child.baseUrl) : [server.baseUrl];
    const team = await server.newTeam();
    const statistics = async (experiment: string) => {
      const counts = await Promise.all(
        ['control', 'treatment'].map(async (variant) => {
          const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
            params: { path: { team: team.id, experiment, variant } },
          });
          return [data!.data.participants, data!.data.events[0]!.conversions];
        }),
      );
      return counts.flat();
    };

    let changedAfterStop = 0;
    let late = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const experiment = `stopping${round}`;
      await createExperiment(team, experiment, { event: 'goal' });
      const ingests = inParallel([...Array(INGESTS).keys()], 24, async (i) => {
        const outcome = await ingestOnce(bases[i % bases.length]!, team, { participant: `p-${round}-${i}`, event: 'goal' });
        return outcome.kind === 'status' ? outcome.status : 0;
      });
      await sleep(50 + round * 40);
      const stop = await team.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { team: team.id, experiment } } });
      expect(stop.response.status).toBe(200);
      const atStop = await statistics(experiment);
      const statuses = await ingests;
      const afterIngests = await statistics(experiment);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      if (JSON.stringify(afterIngests) !== JSON.stringify(atStop)) changedAfterStop++;
      const stoppedAt = stop.data!.data.stopped_at!;
      const dated = await inParallel([...Array(INGESTS).keys()], 16, async (i) => {
        const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant: `p-${round}-${i}` } } });
        return (data?.data ?? []).filter((enrolment) => enrolment.experiment === experiment && enrolment.enrolled_at > stoppedAt).length;
      });
      late += dated.reduce((a, b) => a + b, 0);
    }

    console.log(`[stop ${engine}] ${ROUNDS} stops under ${INGESTS} ingests each: statistics changed after the stop's answer in ${changedAfterStop}, ${late} enrolments dated after stopped_at`);
    expect(changedAfterStop).toBe(0);
    expect(late).toBe(0);
  });
});
