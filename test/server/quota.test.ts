import { afterAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { setQuota } from '../../server/admin/service';
import { engines } from '../support/engines';
import { startChild, stopChild, type ChildServer } from '../support/process';
import { startServer, type TestServer, useServer } from '../support/server';
import { type TestTeam } from '../support/team';

type IngestRequest = components['schemas']['IngestRequest'];

async function experiment(team: TestTeam, key: string, options: { start?: boolean } = {}) {
  const path = { team: team.id };
  const events = await team.api.GET('/api/teams/{team}/events', { params: { path } });
  if (!events.data?.data.some((e) => e.key === 'goal')) await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } });
  await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key, event: 'goal' } });
  for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: key } }, body: variant });
  }
  if (options.start ?? true) {
    const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: key } } });
    expect(started.response.status).toBe(200);
  }
}

function tryIngest(team: TestTeam, body: IngestRequest) {
  return team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body });
}

async function participantStatus(team: TestTeam, key: string): Promise<number> {
  const { response } = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: key } } });
  return response.status;
}

async function ingestUsed(team: TestTeam): Promise<number> {
  const { data } = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
  return data!.data.ingest_used;
}

async function participantsCount(team: TestTeam): Promise<number> {
  const { data } = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
  return data!.data.participants_count;
}

async function controlCounts(team: TestTeam, experimentKey: string) {
  const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
    params: { path: { team: team.id, experiment: experimentKey, variant: 'control' } },
  });
  return { participants: data!.data.participants, conversions: data!.data.events[0].conversions };
}

describe.each(engines)('ingest quota on %s', (engine) => {
  const server = useServer(engine);

  it('when the limit is n, then n ingests pass and the next is a 402 problem that stores nothing', async () => {
    const team = await server().newTeam();
    const updated = await setQuota(server().storage.db, team.id, 3);
    expect(updated.ingest_limit).toBe(3);
    for (const key of ['a', 'b', 'c']) expect((await tryIngest(team, { participant: key })).response.status).toBe(200);

    const { response, error } = await tryIngest(team, { participant: 'd' });
    expect(response.status).toBe(402);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(error).toMatchObject({ type: 'urn:experimentation:problem:quota-exceeded', title: 'Quota Exceeded', status: 402 });
    expect(error?.detail).toContain(String(team.id));
    expect(await participantStatus(team, 'd')).toBe(404);
    expect(await participantsCount(team)).toBe(3);
  });

  it('when the quota is used up, then an existing participant is neither updated, enrolled nor counted', async () => {
    const team = await server().newTeam();
    await experiment(team, 'exp');
    await setQuota(server().storage.db, team.id, 1);
    const first = await tryIngest(team, { participant: { key: 'user-1', notes: 'first' }, experiment: 'exp', variant: 'control' });
    expect(first.response.status).toBe(200);
    const before = { participant: (await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-1' } } })).data, stats: await controlCounts(team, 'exp') };

    await experiment(team, 'exp_new');
    const { response } = await tryIngest(team, { participant: { key: 'user-1', notes: 'second', attributes: { a: 1 } }, event: 'goal' });
    expect(response.status).toBe(402);
    const after = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-1' } } });
    expect(after.data).toEqual(before.participant);
    expect(await controlCounts(team, 'exp')).toEqual(before.stats);
    expect(await controlCounts(team, 'exp_new')).toEqual({ participants: 0, conversions: 0 });
  });

  it('when the limit is 0, then the first ingest is 402 and nothing is stored', async () => {
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 0);
    const { response, error } = await tryIngest(team, { participant: 'user-1' });
    expect(response.status).toBe(402);
    expect(error?.status).toBe(402);
    expect(await participantStatus(team, 'user-1')).toBe(404);
    expect(await participantsCount(team)).toBe(0);
  });

  it('when the limit is null, then ingest is unlimited again', async () => {
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 1);
    expect((await tryIngest(team, { participant: 'a' })).response.status).toBe(200);
    expect((await tryIngest(team, { participant: 'b' })).response.status).toBe(402);

    const updated = await setQuota(server().storage.db, team.id, null);
    expect(updated.ingest_limit).toBeNull();
    for (let i = 0; i < 20; i++) expect((await tryIngest(team, { participant: `user-${i}` })).response.status).toBe(200);
    expect(await participantsCount(team)).toBe(21);
  });

  it('when ingests are accepted, refused or sent as a batch, then the team shows what its quota counted this month', async () => {
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 4);
    expect(await ingestUsed(team)).toBe(0);
    for (const key of ['a', 'b']) expect((await tryIngest(team, { participant: key })).response.status).toBe(200);
    expect((await tryIngest(team, { participant: 'x', event: 'nope' })).response.status).toBe(404);
    expect(await ingestUsed(team)).toBe(2);
    const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items: [{ participant: 'c' }, { participant: 'd' }, { participant: 'e' }] } });
    expect(batch.data!.data.map((item) => item.status)).toEqual([200, 200, 402]);
    expect(await ingestUsed(team)).toBe(4);
    expect((await tryIngest(team, { participant: 'f' })).response.status).toBe(402);
    expect(await ingestUsed(team)).toBe(4);
  });

  it('when the limit is raised, then the ingests already counted still count', async () => {
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 2);
    for (const key of ['a', 'b']) expect((await tryIngest(team, { participant: key })).response.status).toBe(200);
    await setQuota(server().storage.db, team.id, 3);
    expect((await tryIngest(team, { participant: 'c' })).response.status).toBe(200);
    expect((await tryIngest(team, { participant: 'd' })).response.status).toBe(402);
  });

  it('when ingests are refused with 400, 404 or 409, then they use no quota', async () => {
    const team = await server().newTeam();
    await experiment(team, 'draft', { start: false });
    await setQuota(server().storage.db, team.id, 2);
    for (let i = 0; i < 3; i++) {
      expect((await tryIngest(team, { participant: 'x', event: 'nope' })).response.status).toBe(404);
      expect((await tryIngest(team, { participant: 'x', experiment: 'draft' })).response.status).toBe(409);
      expect((await tryIngest(team, { participant: 'x y' })).response.status).toBe(400);
    }
    for (const key of ['a', 'b']) expect((await tryIngest(team, { participant: key })).response.status).toBe(200);
    expect((await tryIngest(team, { participant: 'c' })).response.status).toBe(402);
  });

  it('when the quota is used up and a reference is unknown, then 404 (references are checked first)', async () => {
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 0);
    const { response } = await tryIngest(team, { participant: 'user-1', event: 'nope' });
    expect(response.status).toBe(404);
  });

  it('when the quota is used up and the named experiment is not running, then 402 (the quota is checked before enrolment)', async () => {
    const team = await server().newTeam();
    await experiment(team, 'draft', { start: false });
    await setQuota(server().storage.db, team.id, 0);
    const { response } = await tryIngest(team, { participant: 'user-1', experiment: 'draft' });
    expect(response.status).toBe(402);
    expect(await participantStatus(team, 'user-1')).toBe(404);
  });

  it('when many ingests race on one server, then exactly the limit is accepted', async () => {
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 10);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => tryIngest(team, { participant: `user-${i}` })));
    const statuses = results.map((r) => r.response.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(20);
    expect(await participantsCount(team)).toBe(10);
  });
});

describe.each(engines)('ingest quota across two server processes on %s', (engine) => {
  let server: TestServer | undefined;
  let other: ChildServer | undefined;

  afterAll(async () => {
    if (other) await stopChild(other);
    await server?.close();
  });

  it('when two processes share one database, then together they cannot exceed the limit', async () => {
    // Arrange: the in-process server, and a second one on the same database as a real child process.
    server = await startServer(engine);
    other = await startChild(server.storageEnv);
    const otherUrl = other.baseUrl;

    const team = await server.newTeam();
    await setQuota(server.storage.db, team.id, 25);
    const baseUrls = [server.baseUrl, otherUrl];

    // Act: 60 concurrent ingests, alternating between the two processes.
    const statuses = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const response = await fetch(`${baseUrls[i % 2]}/api/teams/${team.id}/ingest`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${team.ingestKey}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ participant: `user-${i}` }),
        });
        await response.arrayBuffer();
        return { key: `user-${i}`, via: i % 2, status: response.status };
      }),
    );

    // Assert
    const accepted = statuses.filter((s) => s.status === 200);
    expect(accepted).toHaveLength(25);
    expect(statuses.filter((s) => s.status === 402)).toHaveLength(35);
    expect(new Set(accepted.map((s) => s.via)).size).toBe(2);
    expect(await participantsCount(team)).toBe(25);
    const { data } = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id }, query: { per_page: 100 } } });
    expect(data?.data.map((p) => p.key).sort()).toEqual(accepted.map((s) => s.key).sort());
  });
});
