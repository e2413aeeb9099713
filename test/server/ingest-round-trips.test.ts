// A flush on PostgreSQL is two round trips (ingest/flush-postgres.ts): begin, the teams' locks
// and every read in the first; the write and the commit in the second. Round trips are counted
// as the queries a second app of the same storage sends (Kysely's log): a pipeline is one.
import { describe, expect, it } from 'vitest';
import { engines, useServer } from '../support/engines';
import { createExperiment } from '../support/fixtures';
import { useLoggedApp } from '../support/logged-app';
import type { TestTeam } from '../support/server';

type Item = { status: number; data?: { assignments: Array<{ experiment: string; variant: string }> } };

describe.runIf(engines.includes('postgres'))('ingest round trips on postgres', () => {
  const server = useServer('postgres');
  const { statements, baseUrl } = useLoggedApp(server);

  /** The queries the logged app sends to answer a batch of these items — past the request's authentication, one query of its own —, and the items. */
  async function batch(team: TestTeam, items: unknown[]): Promise<{ items: Item[]; queries: string[] }> {
    const from = statements.length;
    const response = await fetch(`${baseUrl()}/api/teams/${team.id}/ingest/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    expect(response.status).toBe(200);
    return { items: ((await response.json()) as { data: Item[] }).data, queries: statements.slice(from).map((query) => query.sql).filter((query) => !/\bingest_key_hash\b/.test(query)) };
  }

  const readsParticipants = (query: string) => /\bfrom\s+participants\b/i.test(query);

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
});
