// POST /api/teams/{team}/ingest/batch: each item gets exactly the single ingest's treatment —
// its own 402/404/409 storing nothing of it, the others stored — in order, answered once durable;
// the request as a whole is validated first. Both engines; the quota across two processes on
// PostgreSQL.
import { afterAll, describe, expect, it } from 'vitest';
import { setQuota } from '../../server/admin/service';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, expectedVariant, stopExperiment } from '../support/fixtures';
import { expectProblem } from '../support/problems';
import { startChild, stopChild, type ChildServer } from '../support/process';
import type { TestTeam } from '../support/team';

type Item = { status: number; data?: { participant: { key: string }; assignments: Array<{ experiment: string; variant: string }> }; error?: { status: number; type: string; detail: string } };

describe.each(engines)('POST /api/teams/{team}/ingest/batch on %s', (engine) => {
  const server = useServer(engine);
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const child of children) await stopChild(child);
  });

  async function batch(team: TestTeam, items: unknown[], baseUrl = server().baseUrl) {
    const response = await fetch(`${baseUrl}/api/teams/${team.id}/ingest/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    return { response, body: (await response.json()) as { data: Item[] } };
  }

  async function participants(team: TestTeam): Promise<string[]> {
    const { data } = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id }, query: { per_page: 100 } } });
    return data!.data.map((participant) => participant.key).sort();
  }

  it('when one item names an unknown event, then it alone is a 404 that stores nothing, and the others are stored in order', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'checkout', { event: 'purchase' });

    const { response, body } = await batch(team, [{ participant: 'a', event: 'purchase' }, { participant: 'b', event: 'nope' }, { participant: 'c' }]);

    expect(response.status).toBe(200);
    expect(body.data.map((item) => item.status)).toEqual([200, 404, 200]);
    expect(body.data.map((item) => item.data?.participant.key)).toEqual(['a', undefined, 'c']);
    expect(body.data[1]!.error).toMatchObject({ status: 404, type: 'urn:experimentation:problem:not-found', detail: "No event 'nope' in team " + team.id + '.' });
    expect(await participants(team)).toEqual(['a', 'c']);
    const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { team: team.id, experiment: 'checkout', variant: 'control' } } });
    const { data: other } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { team: team.id, experiment: 'checkout', variant: 'treatment' } } });
    expect(data!.data.participants + other!.data.participants).toBe(2);
    expect(data!.data.events[0]!.conversions + other!.data.events[0]!.conversions).toBe(1);
  });

  it('when items name a stopped experiment or a variant that does not exist, then those are 409 and 404', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'live', { event: 'goal' });
    await createExperiment(team, 'over', { event: 'goal' });
    await stopExperiment(team, 'over');

    const { body } = await batch(team, [{ participant: 'x', experiment: 'over' }, { participant: 'y', experiment: 'live', variant: 'nope' }, { participant: 'z', experiment: 'live', variant: 'treatment' }]);

    expect(body.data.map((item) => item.status)).toEqual([409, 404, 200]);
    expect(body.data[2]!.data!.assignments).toEqual([expect.objectContaining({ experiment: 'live', variant: 'treatment' })]);
    expect(await participants(team)).toEqual(['z']);
  });

  it('when one participant comes twice, then it keeps its assignment (sticky) and is counted once', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'sticky', { event: 'goal' });
    const { data: config } = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
    const experiment = config!.data.experiments[0]!;

    const { body } = await batch(team, [{ participant: 'twice' }, { participant: 'twice', event: 'goal' }]);

    const expected = expectedVariant(experiment.seed, 'twice', experiment.variants);
    expect(body.data.map((item) => item.data!.assignments.map((a) => a.variant))).toEqual([[expected], [expected]]);
    expect(await participants(team)).toEqual(['twice']);
  });

  it('when the quota runs out within a batch, then the items past it are 402 and not stored', async () => {
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 3);

    const { body } = await batch(team, ['q1', 'q2', 'q3', 'q4', 'q5'].map((participant) => ({ participant })));

    expect(body.data.map((item) => item.status)).toEqual([200, 200, 200, 402, 402]);
    expect(body.data[3]!.error!.type).toBe('urn:experimentation:problem:quota-exceeded');
    expect(await participants(team)).toEqual(['q1', 'q2', 'q3']);
  });

  it('when an item breaks the schema, then the whole batch is a 400 naming that item, and nothing is stored', async () => {
    const team = await server().newTeam();

    const { response, body } = await batch(team, [{ participant: 'fine' }, { event: 'goal' }]);

    expectProblem(response, body, 400, 'Bad Request', ['/body/items/1/participant']);
    expect(await participants(team)).toEqual([]);
  });

  it('when a batch has 500 items and more than 64 KiB, then every item is stored; 501 items are a 400; more than 1 MiB is a 413', async () => {
    const team = await server().newTeam();
    const notes = 'n'.repeat(400);
    const items = Array.from({ length: 500 }, (_, i) => ({ participant: { key: `bulk-${i}`, notes } }));

    const full = await batch(team, items);
    const over = await batch(team, [...items, { participant: 'one-more' }]);
    const huge = await batch(team, Array.from({ length: 500 }, (_, i) => ({ participant: { key: `huge-${i}`, notes: 'n'.repeat(2000), attributes: { a: 'b'.repeat(1000) } } })));

    expect(full.response.status).toBe(200);
    expect(full.body.data.filter((item) => item.status === 200)).toHaveLength(500);
    expectProblem(over.response, over.body, 400, 'Bad Request', ['/body/items']);
    expectProblem(huge.response, huge.body, 413, 'Content Too Large');
    const { data } = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
    expect(data!.data.participants_count).toBe(500);
  });

  it.runIf(engine === 'postgres')('when two processes take batches that run past the quota, then exactly the quota is stored', async () => {
    children.push(await startChild(server().storageEnv), await startChild(server().storageEnv));
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 100);

    const answers = await Promise.all(
      [0, 1, 2, 3].map((b) => batch(team, Array.from({ length: 40 }, (_, i) => ({ participant: `proc-${b}-${i}` })), children[b % 2]!.baseUrl)),
    );

    const statuses = answers.flatMap(({ body }) => body.data.map((item) => item.status));
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    expect(statuses.filter((status) => status === 402)).toHaveLength(60);
    const { data } = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
    expect(data!.data.participants_count).toBe(100);
  });
});
