// Writers that race on one team's rows get documented answers, never a 500: on both engines with
// one server, and on PostgreSQL with two server processes on one database, requests alternating.
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { createExperiment, inParallel, stopExperiment } from '../support/fixtures';
import { startChild, stopChild, type ChildServer } from '../support/process';
import { startServer, type TestServer } from '../support/server';
import { type TestTeam } from '../support/team';

/** A call's status (0: no answer), by raw fetch so that every server is reached the same way. */
async function call(baseUrl: string, credential: string, method: string, path: string, body?: unknown): Promise<number> {
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${credential}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((all, status) => ({ ...all, [status]: (all[status] ?? 0) + 1 }), {});

describe.each(engines)('racing writers on %s', (engine) => {
  let server: TestServer | undefined;
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const child of children) await stopChild(child);
    await server?.close();
  });

  /** Where requests go: the server itself, or (PostgreSQL) two processes of it in turn. */
  async function targets(): Promise<string[]> {
    server ??= await startServer(engine);
    if (engine === 'sqlite') return [server.baseUrl];
    if (children.length === 0) children.push(await startChild(server.storageEnv), await startChild(server.storageEnv));
    return children.map((child) => child.baseUrl);
  }

  it('when participants and their stopped experiment are deleted at once, then every delete answers 200 (8 rounds)', async () => {
    const bases = await targets();
    const outcomes: number[] = [];
    for (let round = 0; round < 8; round++) {
      const team = await server!.newTeam();
      await createExperiment(team, 'done', { event: 'goal' });
      await inParallel([...Array(200).keys()], 20, (i) => call(bases[i % bases.length]!, team.ingestKey, 'POST', `/api/teams/${team.id}/ingest`, { participant: `p-${i}`, event: 'goal' }));
      await stopExperiment(team, 'done');

      const deletes = [...Array(200).keys()].map((i) => () => call(bases[i % bases.length]!, team.token, 'DELETE', `/api/teams/${team.id}/participants/p-${i}`));
      deletes.splice(100, 0, () => call(bases[round % bases.length]!, team.token, 'DELETE', `/api/teams/${team.id}/experiments/done`));
      outcomes.push(...(await inParallel(deletes, 20, (remove) => remove())));
    }
    console.log(`[races ${engine}] deletes of participants and their experiment: ${JSON.stringify(tally(outcomes))}`);
    expect(tally(outcomes)).toEqual({ 200: 8 * 201 });
  });

  it('when ingests name an event that is deleted and created again meanwhile, then each is 200 or 404, and only the 200s are stored', async () => {
    const bases = await targets();
    const team = await server!.newTeam();
    await createExperiment(team, 'busy', { event: 'goal' });
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'flaky' } });
    let ingesting = true;
    const churn = (async () => {
      const churned: number[] = [];
      for (let i = 0; ingesting; i++) {
        const base = bases[i % bases.length]!;
        churned.push(await call(base, team.token, 'DELETE', `/api/teams/${team.id}/events/flaky`));
        churned.push(await call(base, team.token, 'POST', `/api/teams/${team.id}/events`, { key: 'flaky' }));
      }
      return churned;
    })();

    const ingests = await inParallel([...Array(400).keys()], 16, (i) => call(bases[i % bases.length]!, team.ingestKey, 'POST', `/api/teams/${team.id}/ingest`, { participant: `q-${i}`, event: 'flaky' }));
    ingesting = false;
    const churned = await churn;

    console.log(`[races ${engine}] ingests naming a churning event: ${JSON.stringify(tally(ingests))}; its deletes and creates: ${JSON.stringify(tally(churned))}`);
    expect(ingests.filter((status) => status !== 200 && status !== 404)).toEqual([]);
    expect(churned.filter((status) => status !== 200 && status !== 404 && status !== 409)).toEqual([]);
    const { data } = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
    expect(data!.data.participants_count).toBe(ingests.filter((status) => status === 200).length);
  });

  it('when experiments are created on a goal event that is deleted and created again meanwhile, then each is 200, 404 or 409', async () => {
    const bases = await targets();
    const team: TestTeam = await server!.newTeam();
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'goal' } });
    let creating = true;
    const churn = (async () => {
      for (let i = 0; creating; i++) {
        await call(bases[i % bases.length]!, team.token, 'DELETE', `/api/teams/${team.id}/events/goal`);
        await call(bases[i % bases.length]!, team.token, 'POST', `/api/teams/${team.id}/events`, { key: 'goal' });
      }
    })();
    const creates = await inParallel([...Array(300).keys()], 12, (i) =>
      call(bases[i % bases.length]!, team.token, 'POST', `/api/teams/${team.id}/experiments`, { key: `e${i}`, event: 'goal' }),
    );
    creating = false;
    await churn;

    console.log(`[races ${engine}] experiments created on a churning goal: ${JSON.stringify(tally(creates))}`);
    expect(creates.filter((status) => ![200, 404, 409].includes(status))).toEqual([]);
  });
});
