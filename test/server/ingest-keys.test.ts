// Idempotency keys on ingest: an item whose key the team has stored within the window is
// answered the data it was first answered, stores nothing and charges no quota — on a retry, within
// one batch, for many identical requests at once, and (PostgreSQL) from two server processes; an
// item refused keeps no key; keys past their window are swept. Both engines.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { setQuota } from '../../server/admin/service';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, ingestOk, inParallel } from '../support/fixtures';
import { runningExperiment, startChild, stopChild, type ChildServer } from '../support/process';
import { clientsOf, createTeamAt } from '../support/team';
import { openStorageAt } from '../support/storage';
import type { Client, TestTeam } from '../support/team';
import type { Storage } from '../../server/storage/database';

type IngestRequest = components['schemas']['IngestRequest'];

interface Counted {
  participants: number;
  conversions: number;
}

/** Participants and conversions of `goal` over both variants of an experiment. */
async function totals(api: Client, team: number, experiment: string): Promise<Counted> {
  let participants = 0;
  let conversions = 0;
  for (const variant of ['control', 'treatment']) {
    const { data } = await api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { team, experiment, variant } } });
    participants += data!.data.participants;
    conversions += data!.data.events.find((event) => event.event === 'goal')!.conversions;
  }
  return { participants, conversions };
}

/** The team's accepted ingests this month, as the quota counts them, and its stored keys. */
async function stored(storage: Storage, team: number): Promise<{ used: number; keys: number }> {
  const usage = await storage.db.selectFrom('ingest_usage').select((eb) => eb.fn.sum<number>('count').as('used')).where('team_id', '=', team).executeTakeFirst();
  const keys = await storage.db.selectFrom('ingest_keys').select((eb) => eb.fn.countAll<number>().as('keys')).where('team_id', '=', team).executeTakeFirst();
  return { used: Number(usage?.used ?? 0), keys: Number(keys?.keys ?? 0) };
}

function ingest(client: Client, team: number, body: IngestRequest) {
  return client.POST('/api/teams/{team}/ingest', { params: { path: { team } }, body });
}

function batch(client: Client, team: number, items: IngestRequest[]) {
  return client.POST('/api/teams/{team}/ingest/batch', { params: { path: { team } }, body: { items } });
}

describe.each(engines)('ingest idempotency keys on %s', (engine) => {
  const server = useServer(engine);
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const child of children) await stopChild(child);
  });

  /**
   * A team with a running experiment `exp`, and one ingest stored already (enrolling no one): a
   * team's first ingests on a server are flushed one at a time, the later ones together — as
   * concurrent ingests and a batch's items are here.
   */
  async function newTeam(): Promise<TestTeam> {
    const team = await server().newTeam();
    await createExperiment(team, 'exp');
    await ingestOk(team, { participant: 'warm-up', enrol: false });
    return team;
  }

  it('when an ingest is sent again with its key, then the answer is the same data and nothing more is stored or charged', async () => {
    const team = await newTeam();
    const key = randomUUID();
    const first = await ingestOk(team, { participant: { key: 'p', attributes: { plan: 'pro' } }, event: 'goal', idempotency_key: key });
    const before = { counted: await totals(team.api, team.id, 'exp'), stored: await stored(server().storage, team.id) };

    const again = await ingestOk(team, { participant: { key: 'p', attributes: { plan: 'pro' } }, event: 'goal', idempotency_key: key });
    const retried = await batch(team.ingest, team.id, [{ participant: { key: 'p', attributes: { plan: 'pro' } }, event: 'goal', idempotency_key: key }]);

    expect(again).toEqual(first);
    expect(retried.data!.data).toEqual([{ status: 200, data: first }]);
    expect(before).toEqual({ counted: { participants: 1, conversions: 1 }, stored: { used: 2, keys: 1 } });
    expect(await totals(team.api, team.id, 'exp')).toEqual(before.counted);
    expect(await stored(server().storage, team.id)).toEqual(before.stored);
  });

  it('when the participant changed since, then a replay is still answered the data of the first time, and a replay is never refused for the quota', async () => {
    const team = await newTeam();
    const key = randomUUID();
    const first = await ingestOk(team, { participant: { key: 'q', notes: 'first' }, idempotency_key: key });
    await ingestOk(team, { participant: { key: 'q', notes: 'second' } });
    await setQuota(server().storage.db, team.id, 3);

    const again = await ingestOk(team, { participant: { key: 'q', notes: 'third' }, idempotency_key: key });
    const over = await ingest(team.ingest, team.id, { participant: 'r', idempotency_key: randomUUID() });

    expect(again).toEqual(first);
    expect(again.participant.notes).toBe('first');
    expect(over.response.status).toBe(402);
    const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'q' } } });
    expect(read.data!.data.notes).toBe('second');
  });

  it('when two teams send the same key, then each team stores its own item: keys are scoped to the team', async () => {
    const [one, two] = [await newTeam(), await newTeam()];
    const key = randomUUID();

    const first = await ingestOk(one, { participant: 'same', event: 'goal', idempotency_key: key });
    const second = await ingestOk(two, { participant: { key: 'same', notes: 'team two' }, event: 'goal', idempotency_key: key });

    expect(first.participant.notes).toBeNull();
    expect(second.participant.notes).toBe('team two');
    expect(await totals(two.api, two.id, 'exp')).toEqual({ participants: 1, conversions: 1 });
    expect(await stored(server().storage, two.id)).toEqual({ used: 2, keys: 1 });
  });

  it('when one batch carries a key twice, then the second item is a replay of the first: the same data, counted once', async () => {
    const team = await newTeam();
    const key = randomUUID();

    const { data } = await batch(team.ingest, team.id, [
      { participant: 'b', event: 'goal', idempotency_key: key },
      { participant: 'b', event: 'goal', idempotency_key: randomUUID() },
      { participant: 'b', event: 'goal', idempotency_key: key },
    ]);

    const items = data!.data;
    expect(items.map((item) => item.status)).toEqual([200, 200, 200]);
    expect(items[2]).toEqual(items[0]);
    expect(await totals(team.api, team.id, 'exp')).toEqual({ participants: 1, conversions: 2 });
    expect(await stored(server().storage, team.id)).toEqual({ used: 3, keys: 2 });
  });

  it('when many identical requests carrying one key arrive at once, then one is stored and every one is answered its data', async () => {
    const team = await newTeam();
    const body: IngestRequest = { participant: 'many', event: 'goal', idempotency_key: randomUUID() };

    const answers = await inParallel([...Array(40).keys()], 40, async (i) =>
      i % 4 === 0 ? (await batch(team.ingest, team.id, [body, body])).data!.data.map((item) => item.data) : [(await ingest(team.ingest, team.id, body)).data!.data],
    );

    const data = answers.flat();
    expect(data).toHaveLength(50);
    for (const answer of data) expect(answer).toEqual(data[0]);
    expect(await totals(team.api, team.id, 'exp')).toEqual({ participants: 1, conversions: 1 });
    expect(await stored(server().storage, team.id)).toEqual({ used: 2, keys: 1 });
  });

  it('when an item with a key is refused (409, 404), then its key is not kept: sent again once fixed, it is processed', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'later', { start: false });
    const key = randomUUID();
    const other = randomUUID();

    await ingestOk(team, { participant: 'warm-up', enrol: false });
    const refused = await ingest(team.ingest, team.id, { participant: 'x', event: 'goal', experiment: 'later', idempotency_key: key });
    const refusedInBatch = await batch(team.ingest, team.id, [
      { participant: 'x', event: 'goal', experiment: 'later', idempotency_key: key },
      { participant: 'z', idempotency_key: randomUUID() },
      { participant: 'x', event: 'goal', experiment: 'later', idempotency_key: key },
    ]);
    const unknown = await batch(team.ingest, team.id, [{ participant: 'y', event: 'nope', idempotency_key: other }]);
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: team.id, experiment: 'later' } } });
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'nope' } });
    const retried = await ingest(team.ingest, team.id, { participant: 'x', event: 'goal', experiment: 'later', idempotency_key: key });
    const unknownRetried = await batch(team.ingest, team.id, [{ participant: 'y', event: 'nope', idempotency_key: other }]);

    expect(refused.response.status).toBe(409);
    expect(refusedInBatch.data!.data.map((item) => item.status)).toEqual([409, 200, 409]);
    expect(unknown.data!.data[0]!.status).toBe(404);
    expect(retried.response.status).toBe(200);
    expect(retried.data!.data.assignments.map((assignment) => assignment.experiment)).toEqual(['later']);
    expect(unknownRetried.data!.data[0]!.status).toBe(200);
    expect(await totals(team.api, team.id, 'later')).toEqual({ participants: 2, conversions: 1 });
    expect(await stored(server().storage, team.id)).toEqual({ used: 4, keys: 3 });
  });

  it('when a key is older than its window, then it is swept and the item sent again is processed anew', async () => {
    const team = await createTeamAt(server().baseUrl, server().storageEnv);
    const child = await startChild(server().storageEnv, { INGEST_KEY_WINDOW_SECONDS: '1' });
    children.push(child);
    await runningExperiment(child.baseUrl, team);
    const { api, ingest: client } = clientsOf(child.baseUrl, team);
    const body: IngestRequest = { participant: 'old', event: 'goal', idempotency_key: randomUUID() };

    const first = await ingest(client, team.id, body);
    await expect.poll(async () => (await stored(server().storage, team.id)).keys, { timeout: 15_000, interval: 200 }).toBe(0);
    const again = await ingest(client, team.id, body);

    const counted = await totals(api, team.id, 'exp');
    const keys = await stored(server().storage, team.id);
    // Its sweep would remove the other tests' keys too: this server goes now.
    await stopChild(child);

    expect(first.response.status).toBe(200);
    expect(again.response.status).toBe(200);
    expect(counted).toEqual({ participants: 1, conversions: 2 });
    expect(keys.used).toBe(2);
  });

  it.runIf(engine === 'postgres')('when two server processes receive the same keys at once, then each key is stored once', async () => {
    const team = await createTeamAt(server().baseUrl, server().storageEnv);
    children.push(await startChild(server().storageEnv), await startChild(server().storageEnv));
    const [one, two] = children.slice(-2) as [ChildServer, ChildServer];
    await runningExperiment(one.baseUrl, team);
    const clients = [clientsOf(one.baseUrl, team).ingest, clientsOf(two.baseUrl, team).ingest];
    const bodies: IngestRequest[] = Array.from({ length: 30 }, (_, i) => ({ participant: `two-${i}`, event: 'goal', idempotency_key: randomUUID() }));

    const answers = await inParallel([...Array(120).keys()], 40, async (i) => {
      const body = bodies[i % bodies.length]!;
      const { data } = await ingest(clients[i % 2]!, team.id, body);
      return { key: body.idempotency_key!, data: data!.data };
    });

    for (const { key, data } of answers) expect(data).toEqual(answers.find((answer) => answer.key === key)!.data);
    expect(await totals(clientsOf(one.baseUrl, team).api, team.id, 'exp')).toEqual({ participants: 30, conversions: 30 });
    expect(await stored(server().storage, team.id)).toEqual({ used: 30, keys: 30 });
  });
});

describe.each(engines)('the ingest_keys table on %s (migration 010)', (engine) => {
  const server = useServer(engine);

  it('when the migration is undone and done again, then the table goes and comes back', async () => {
    const storage = await openStorageAt(server().storageEnv);
    try {
      const { Migrator } = await import('kysely');
      const { migrationsOf } = await import('../../server/storage/database');
      const migrator = new Migrator({ db: storage.db, provider: { getMigrations: async () => migrationsOf(engine) } });

      const down = await migrator.migrateTo('009_guardrails');
      const tablesAfterDown = (await storage.db.introspection.getTables()).map((table) => table.name);
      const up = await migrator.migrateToLatest();
      const tablesAfterUp = (await storage.db.introspection.getTables()).map((table) => table.name);

      expect(down.error).toBeUndefined();
      expect(down.results?.map((result) => result.migrationName)).toContain('010_ingest_keys');
      expect(tablesAfterDown).not.toContain('ingest_keys');
      expect(up.error).toBeUndefined();
      expect(tablesAfterUp).toContain('ingest_keys');
    } finally {
      await storage.close();
    }
  });
});
