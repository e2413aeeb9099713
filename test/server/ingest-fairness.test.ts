// Ingest fairness: a refused item costs no statement of its own and reads no participant, and a
// team's large batch does not hold the shared flush while another team's ingest waits — that
// ingest is answered before the batch. Statements are counted through Kysely's log on a second
// app of the same storage; no timing is asserted. Both engines.
import { describe, expect, it } from 'vitest';
import { setQuota } from '../../server/admin/service';
import { engines } from '../support/engines';
import { recordQueries, useServer } from '../support/server';
import { createExperiment, ingestOk, stopExperiment } from '../support/fixtures';
import type { TestTeam } from '../support/team';

type Item = { status: number };

describe.each(engines)('ingest fairness on %s', (engine) => {
  const server = useServer(engine);
  const { statements, hook, log } = recordQueries();
  const logged = useServer(() => ({ storageEnv: server().storageEnv, open: { log } }));

  function send(team: TestTeam, path: '/ingest' | '/ingest/batch', body: unknown) {
    return fetch(`${logged().baseUrl}/api/teams/${team.id}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /** The statements the logged app runs to answer a batch of these items, and the items' statuses. */
  async function batchStatements(team: TestTeam, items: unknown[]): Promise<{ statuses: number[]; statements: string[] }> {
    const from = statements.length;
    const response = await send(team, '/ingest/batch', { items });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: Item[] };
    return { statuses: body.data.map((item) => item.status), statements: statements.slice(from).map((query) => query.sql) };
  }

  const readsParticipants = (statement: string) => /\b(from|join)\s+(participants|enrolments|exclusions|conversions)\b/i.test(statement);

  it('when a batch names a stopped experiment of 20 variants, then its 409s cost no statement per item and read no participant', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'live');
    await createExperiment(team, 'over', { start: false });
    const path = { team: team.id, experiment: 'over' };
    for (let i = 0; i < 18; i++) expect((await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key: `v${i}` } })).response.status).toBe(200);
    expect((await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path } })).response.status).toBe(200);
    await stopExperiment(team, 'over');
    const item = (i: number) => ({ participant: `p${i}`, experiment: 'over', variant: 'v7' });
    await batchStatements(team, [item(0)]); // the team's context is read once per config version

    const few = await batchStatements(team, Array.from({ length: 2 }, (_, i) => item(i)));
    const many = await batchStatements(team, Array.from({ length: 300 }, (_, i) => item(i)));

    expect(new Set(many.statuses)).toEqual(new Set([409]));
    expect(many.statements.length).toBe(few.statements.length);
    expect(many.statements.filter(readsParticipants)).toEqual([]);
  });

  it('when the quota is used up, then a batch of known participants is all 402 without reading them or their histories', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    const items = Array.from({ length: 200 }, (_, i) => ({ participant: `known-${i}`, event: 'goal' }));
    expect(new Set((await batchStatements(team, items)).statuses)).toEqual(new Set([200]));
    await setQuota(server().storage.db, team.id, 0);

    const few = await batchStatements(team, items.slice(0, 2));
    const many = await batchStatements(team, items);

    expect(new Set(many.statuses)).toEqual(new Set([402]));
    expect(many.statements.length).toBe(few.statements.length);
    expect(many.statements.filter(readsParticipants)).toEqual([]);
  });

  it('when the quota has room for one item of a batch, then only that item\'s participant is read; the others are 402 unread', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    const items = Array.from({ length: 100 }, (_, i) => ({ participant: `seen-${i}`, event: 'goal' }));
    await batchStatements(team, items);
    await setQuota(server().storage.db, team.id, 101);

    const { statuses, statements: run } = await batchStatements(team, items);

    expect(statuses).toEqual([200, ...Array(99).fill(402)]);
    const named = run.map((_, i) => JSON.stringify(statements.at(-run.length + i)!.parameters));
    expect(named.some((parameters) => parameters.includes('seen-0'))).toBe(true);
    expect(named.filter((parameters) => /seen-[1-9]/.test(parameters))).toEqual([]);
  });

  it('when a batch names an unknown event, then its 404s cost no statement per item once the key was looked up', async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    const item = (i: number) => ({ participant: `u${i}`, event: 'nope' });
    await batchStatements(team, [item(0)]);

    const few = await batchStatements(team, Array.from({ length: 2 }, (_, i) => item(i)));
    const many = await batchStatements(team, Array.from({ length: 300 }, (_, i) => item(i)));

    expect(new Set(many.statuses)).toEqual(new Set([404]));
    expect(many.statements.length).toBe(few.statements.length);
  });

  it("when another team's single ingest is sent while a large batch is being written, then it is answered before the batch", async () => {
    const large = await server().newTeam();
    for (let i = 0; i < 10; i++) await createExperiment(large, `fanout_${i}`);
    const other = await server().newTeam();
    await createExperiment(other, 'solo');
    await ingestOk(large, { participant: 'warm' });
    const answered: string[] = [];
    let sent: Promise<Response> | undefined;
    hook.onStatement = (query) => {
      // The large batch's first enrolments are being written: the other team's ingest goes now.
      if (!sent && /insert into enrolments/i.test(query.sql)) {
        sent = send(other, '/ingest', { participant: 'single', event: 'goal' }).then((response) => {
          answered.push('single');
          return response;
        });
      }
    };

    const batch = await send(large, '/ingest/batch', { items: Array.from({ length: 500 }, (_, i) => ({ participant: `fan-${i}`, event: 'goal' })) });
    answered.push('batch');
    const single = await sent!;
    hook.onStatement = () => {};

    expect(batch.status).toBe(200);
    expect(single.status).toBe(200);
    expect(answered).toEqual(['single', 'batch']);
    const body = (await batch.json()) as { data: Array<Item & { data: { assignments: unknown[] } }> };
    expect(body.data.map((item) => item.status)).toEqual(Array(500).fill(200));
    expect(body.data.every((item) => item.data.assignments.length === 10)).toBe(true);
  });

  it('when a batch writes 1 400 rows, then SQLite writes it in two flushes (1 000 rows at most a flush) and PostgreSQL in one (2 000)', async () => {
    const team = await server().newTeam();
    for (let i = 0; i < 3; i++) await createExperiment(team, `rows_${i}`);
    expect((await send(team, '/ingest', { participant: 'warm' })).status).toBe(200);

    const { statuses, statements: run } = await batchStatements(
      team,
      Array.from({ length: 200 }, (_, i) => ({ participant: `r-${i}`, event: 'goal' })),
    );

    // 7 rows an item: the participant, and an enrolment and a conversion in each experiment.
    expect(statuses).toEqual(Array(200).fill(200));
    expect(run.filter((statement) => /(^|;)\s*commit$/i.test(statement.trim()))).toHaveLength(engine === 'postgres' ? 1 : 2);
  });

  it('when a batch is split across flushes, then its items are decided in order: the quota runs out at the same item', async () => {
    const team = await server().newTeam();
    for (let i = 0; i < 10; i++) await createExperiment(team, `wide_${i}`);
    await ingestOk(team, { participant: 'warm' });
    await setQuota(server().storage.db, team.id, 301);

    const { statuses, statements: run } = await batchStatements(
      team,
      Array.from({ length: 400 }, (_, i) => ({ participant: `q-${i % 350}`, event: 'goal' })),
    );

    // PostgreSQL sends the commit with the flush's write, in one message (flush-postgres.ts).
    expect(run.filter((statement) => /(^|;)\s*commit$/i.test(statement.trim())).length).toBeGreaterThan(1);
    expect(statuses).toEqual([...Array(300).fill(200), ...Array(100).fill(402)]);
  });
});
