// A flush on PostgreSQL is two round trips (ingest/flush-postgres.ts): begin, the teams' locks
// and every read in the first; the write and the commit in the second. A flush of participants
// the server has not seen decides on what it saw instead, and is one round trip: begin, the locks,
// the check of what it assumed, the write and the commit. Round trips are counted as the queries
// a second app of the same storage sends (Kysely's log): a pipeline is one.
import { describe, expect, it } from 'vitest';
import { setQuota } from '../../server/admin/service';
import { engines } from '../support/engines';
import { recordQueries, useServer } from '../support/server';
import { createExperiment } from '../support/fixtures';
import type { TestTeam } from '../support/team';

type Item = { status: number; data?: { assignments: Array<{ experiment: string; variant: string }> } };

describe.runIf(engines.includes('postgres'))('ingest round trips on postgres', () => {
  const server = useServer('postgres');
  const { statements, log } = recordQueries();
  const logged = useServer(() => ({ storageEnv: server().storageEnv, open: { log } }));

  /** The queries the logged app sends to answer a batch of these items — past the request's authentication, one query of its own —, and the items. */
  async function batch(team: TestTeam, items: unknown[]): Promise<{ items: Item[]; queries: string[] }> {
    const from = statements.length;
    const response = await fetch(`${logged().baseUrl}/api/teams/${team.id}/ingest/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    expect(response.status).toBe(200);
    return { items: ((await response.json()) as { data: Item[] }).data, queries: statements.slice(from).map((query) => query.sql).filter((query) => !/\bingest_key_hash\b/.test(query)) };
  }

  const readsParticipants = (query: string) => /\bfrom\s+participants\b/i.test(query);
  /** Both variants' participants and `goal` conversions (all, unique) together. */
  async function totals(team: TestTeam) {
    const sum = { participants: 0, conversions: 0, unique: 0 };
    for (const variant of ['control', 'treatment']) {
      const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { team: team.id, experiment: 'checkout', variant } } });
      const goal = data!.data.events.find((event) => event.event === 'goal');
      sum.participants += data!.data.participants;
      sum.conversions += goal?.conversions ?? 0;
      sum.unique += goal?.unique_conversions ?? 0;
    }
    return sum;
  }
  const ingestOnServer = (team: TestTeam, items: unknown[]) =>
    fetch(`${server().baseUrl}/api/teams/${team.id}/ingest/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    }).then(async (response) => ((await response.json()) as { data: Item[] }).data);

  it("when a team's ingests of stored and new participants are flushed, then the flush is two round trips: the reads, then the write and the commit", async () => {
    // Arrange
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    const first = await batch(team, [{ participant: 'known-1', event: 'goal' }, { participant: 'known-2' }]);
    // Act
    const { items, queries } = await batch(team, [
      { participant: 'known-1', event: 'goal', idempotency_key: 'k-1' },
      { participant: { key: 'known-2', attributes: { plan: 'pro' } }, event: 'goal' },
      { participant: 'new-1' },
      { participant: 'new-2', event: 'goal' },
      { participant: 'known-1', event: 'goal', idempotency_key: 'k-1' },
    ]);
    // Assert
    expect(items.map((item) => item.status)).toEqual([200, 200, 200, 200, 200]);
    expect(items[0]!.data!.assignments).toEqual(first.items[0]!.data!.assignments);
    expect(queries).toHaveLength(2);
    expect(queries[0]).toMatch(/^begin;\s*set local plan_cache_mode = force_generic_plan;\s*select pg_advisory_xact_lock/i);
    expect(readsParticipants(queries[0]!)).toBe(true);
    expect(queries[1]).toMatch(/insert into enrolments[\s\S]*;\s*commit$/i);
  });

  it('when an ingest the flush did not expect is accepted, then its participant and history are read after the decisions, in one more round trip', async () => {
    // Arrange: the logged app last saw `later` as a draft; it is started meanwhile.
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    await createExperiment(team, 'later', { start: false });
    const before = await batch(team, [{ participant: 'known-1' }, { participant: 'known-1', experiment: 'later' }]);
    expect(before.items.map((item) => item.status)).toEqual([200, 409]);
    const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: team.id, experiment: 'later' } } });
    expect(started.response.status).toBe(200);
    // Act
    const { items, queries } = await batch(team, [{ participant: 'known-1', experiment: 'later', event: 'goal' }]);
    // Assert
    expect(items[0]!.status).toBe(200);
    expect(items[0]!.data!.assignments.map((assignment) => assignment.experiment)).toEqual(['checkout', 'later']);
    expect(items[0]!.data!.assignments[0]).toEqual(before.items[0]!.data!.assignments[0]);
    expect(readsParticipants(queries[0]!)).toBe(false);
    expect(queries.filter(readsParticipants)).toHaveLength(1);
    expect(queries.at(-1)).toMatch(/;\s*commit$/i);
  });

  it('when a flush names only participants the server has not seen, then it is one round trip: the locks, the check of what it assumed, the write and the commit', async () => {
    // Arrange: the logged app has seen the team's config and its event.
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    await batch(team, [{ participant: 'seen-1', event: 'goal' }]);
    // Act
    const { items, queries } = await batch(team, [{ participant: 'new-1', event: 'goal', idempotency_key: 'k-1' }, { participant: 'new-2' }, { participant: 'new-1', event: 'goal' }]);
    // Assert
    expect(items.map((item) => item.status)).toEqual([200, 200, 200]);
    expect(items[2]!.data!.assignments).toEqual(items[0]!.data!.assignments);
    expect(queries).toHaveLength(1);
    expect(queries[0]).toMatch(/^begin;\s*set local plan_cache_mode = force_generic_plan;\s*select pg_advisory_xact_lock[\s\S]*savepoint assumed;[\s\S]*ingest_flush_assumes[\s\S]*insert into enrolments[\s\S]*;\s*commit$/i);
    expect(await totals(team)).toEqual({ participants: 3, conversions: 3, unique: 2 });
  });

  it('when another server has stored a participant the flush assumed new, then nothing of the assumption is written: the flush reads under the same locks and keeps its assignment', async () => {
    // Arrange: the other server enrols `elsewhere`; the logged app has seen the config, not the participant.
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    await batch(team, [{ participant: 'seen-1', event: 'goal' }]);
    const [stored] = await ingestOnServer(team, [{ participant: 'elsewhere', event: 'goal' }]);
    // Act
    const { items, queries } = await batch(team, [{ participant: 'elsewhere', event: 'goal' }, { participant: 'new-3' }]);
    // Assert
    expect(items.map((item) => item.status)).toEqual([200, 200]);
    expect(items[0]!.data!.assignments).toEqual(stored!.data!.assignments);
    expect(queries).toHaveLength(3);
    expect(queries[0]).toMatch(/ingest_flush_assumes[\s\S]*;\s*commit$/i);
    expect(queries[1]).toMatch(/^rollback to savepoint assumed;/i);
    expect(readsParticipants(queries[1]!)).toBe(true);
    expect(queries[2]).toMatch(/insert into enrolments[\s\S]*;\s*commit$/i);
    expect(await totals(team)).toEqual({ participants: 3, conversions: 3, unique: 2 });
    const participants = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id } } });
    expect(participants.data!.data.map((participant) => participant.key).sort()).toEqual(['elsewhere', 'new-3', 'seen-1']);
  });

  it('when another server has stored an idempotency key the flush assumed new, then the ingest is answered as its replay and nothing of it is stored', async () => {
    // Arrange
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    await batch(team, [{ participant: 'seen-1', event: 'goal' }]);
    const [stored] = await ingestOnServer(team, [{ participant: 'first', event: 'goal', idempotency_key: 'k-shared' }]);
    // Act: the same key, naming a participant neither server has stored.
    const { items, queries } = await batch(team, [{ participant: 'second', event: 'goal', idempotency_key: 'k-shared' }]);
    // Assert
    expect(items).toEqual([stored]);
    expect(queries[0]).toMatch(/ingest_flush_assumes/);
    expect(queries[1]).toMatch(/^rollback to savepoint assumed;/i);
    expect(await totals(team)).toEqual({ participants: 2, conversions: 2, unique: 2 });
    const participants = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id } } });
    expect(participants.data!.data.map((participant) => participant.key).sort()).toEqual(['first', 'seen-1']);
  });
  it('when another server has changed the config the flush assumed, then nothing of the assumption is written: the flush reads under the same locks and decides on the new config', async () => {
    // Arrange: the logged app has seen `checkout` running; the other server stops it.
    const team = await server().newTeam();
    await createExperiment(team, 'checkout');
    await batch(team, [{ participant: 'seen-1', event: 'goal' }]);
    const stopped = await team.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { team: team.id, experiment: 'checkout' } } });
    expect(stopped.response.status).toBe(200);
    // Act
    const { items, queries } = await batch(team, [{ participant: 'new-1', experiment: 'checkout', event: 'goal' }, { participant: 'new-2', event: 'goal' }]);
    // Assert
    expect(items.map((item) => item.status)).toEqual([409, 200]);
    expect(items[1]!.data!.assignments).toEqual([]);
    expect(queries[0]).toMatch(/ingest_flush_assumes[\s\S]*;\s*commit$/i);
    expect(queries[1]).toMatch(/^rollback to savepoint assumed;/i);
    expect(await totals(team)).toEqual({ participants: 1, conversions: 1, unique: 1 });
    const participants = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id } } });
    expect(participants.data!.data.map((participant) => participant.key).sort()).toEqual(['new-2', 'seen-1']);
  });

  it('when another server has used the quota the flush assumed free, then nothing of the assumption is written: the flush reads the use under the same locks and refuses what no longer fits with 402', async () => {
    // Arrange: a limit of 3; the logged app has seen one ingest used, the other server uses a second.
    const team = await server().newTeam();
    await setQuota(server().storage.db, team.id, 3);
    await createExperiment(team, 'checkout');
    await batch(team, [{ participant: 'seen-1', event: 'goal' }]);
    await ingestOnServer(team, [{ participant: 'elsewhere', event: 'goal' }]);
    // Act
    const { items, queries } = await batch(team, [{ participant: 'new-1', event: 'goal' }, { participant: 'new-2', event: 'goal' }]);
    // Assert
    expect(items.map((item) => item.status)).toEqual([200, 402]);
    expect(queries[0]).toMatch(/ingest_flush_assumes[\s\S]*;\s*commit$/i);
    expect(queries[1]).toMatch(/^rollback to savepoint assumed;/i);
    expect(await totals(team)).toEqual({ participants: 3, conversions: 3, unique: 3 });
    const participants = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id } } });
    expect(participants.data!.data.map((participant) => participant.key).sort()).toEqual(['elsewhere', 'new-1', 'seen-1']);
  });
});
