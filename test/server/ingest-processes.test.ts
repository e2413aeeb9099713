import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { createExperiment, inParallel } from '../support/fixtures';
import { ingestOnce, startChild, stopChild, type ChildServer } from '../support/process';
import { startServer, type TestServer } from '../support/server';

const INGESTS = 600;
const IN_FLIGHT = 40;

/** Deadlocks PostgreSQL has detected in the database (its backends report them when they exit). */
async function deadlocksIn(databaseUrl: string): Promise<number> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ deadlocks: string }>('select deadlocks from pg_stat_database where datname = current_database()');
    return Number(rows[0]!.deadlocks);
  } finally {
    await client.end();
  }
}

describe.runIf(engines.includes('postgres'))('ingest from two server processes on one postgres database', () => {
  let server: TestServer | undefined;
  const children: ChildServer[] = [];

  afterAll(async () => {
    for (const child of children) await stopChild(child);
    await server?.close();
  });

  it('when both take concurrent ingests that write the same counters, then no batch deadlocks with the other and every ingest is answered 200', async () => {
    // Arrange: three running experiments (six variants), so each batch writes many shared counter rows
    server = await startServer('postgres');
    const team = await server.newTeam();
    for (const key of ['one', 'two', 'three']) await createExperiment(team, key, { event: 'goal' });
    children.push(await startChild(server.storageEnv), await startChild(server.storageEnv));
    const databaseUrl = server.storageEnv.DATABASE_URL!;
    const before = await deadlocksIn(databaseUrl);

    // Act: new participants with an event, alternating between the two processes
    const statuses = await inParallel([...Array(INGESTS).keys()], IN_FLIGHT, async (i) => {
      const outcome = await ingestOnce(children[i % 2]!.baseUrl, team, { participant: `p-${i}`, event: 'goal' });
      return outcome.kind === 'status' ? outcome.status : 0;
    });
    // A backend reports its deadlocks to the statistics when it exits: stop both processes.
    for (const child of children.splice(0)) await stopChild(child);

    // Assert
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(await deadlocksIn(databaseUrl)).toBe(before);
    for (const experiment of ['one', 'two', 'three']) {
      const enrolled = await Promise.all(
        ['control', 'treatment'].map(async (variant) => {
          const path = { team: team.id, experiment, variant };
          const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path } });
          return data!.data.participants;
        }),
      );
      expect(enrolled[0]! + enrolled[1]!).toBe(INGESTS);
    }
  });
});
