// What a process keeps that clients' requests fill is bounded (CACHE_*). Event and experiment keys
// that ingests name and that are not found are remembered, so naming one again is a 404 without a
// query — and an ingest key alone can name any number of them (CACHE_UNKNOWN_KEYS); configs are
// kept per team (CACHE_TEAMS). Both engines: a second app with small bounds, whose statements are
// counted through Kysely's log; what it forgot costs its query again.
import { describe, expect, it } from 'vitest';
import { UnknownKeys } from '../../server/ingest/unknown-keys';
import { engines } from '../support/engines';
import { recordQueries, useServer } from '../support/server';
import { createExperiment } from '../support/fixtures';
import type { TestTeam } from '../support/team';

const BOUND = 8;
const TEAMS = 2;

describe.each(engines)('bounded caches on %s', (engine) => {
  const server = useServer(engine);
  const { statements, log } = recordQueries();
  const logged = useServer(() => ({ storageEnv: server().storageEnv, open: { log }, app: { caches: { teams: TEAMS, unknownKeys: BOUND } } }));

  /** How many times the logged app read `team`'s flags to answer its GET …/config. */
  async function configBuilds(team: TestTeam): Promise<number> {
    const from = statements.length;
    const response = await fetch(`${logged().baseUrl}/api/teams/${team.id}/config`, { headers: { authorization: `Bearer ${team.ingestKey}` } });
    expect(response.status).toBe(200);
    await response.body?.cancel();
    return statements.slice(from).filter((query) => /from "?features"?/i.test(query.sql)).length;
  }

  it(`when more than ${TEAMS} teams' configs are asked for, then the cache starts over instead of growing`, async () => {
    const [first, ...others] = await Promise.all(Array.from({ length: TEAMS + 1 }, () => server().newTeam()));
    expect(await configBuilds(first!)).toBe(1);
    expect(await configBuilds(first!)).toBe(0);
    for (const team of others) expect(await configBuilds(team)).toBe(1);
    expect(await configBuilds(first!)).toBe(1);
  });

  async function ingest(team: TestTeam, body: Record<string, string>): Promise<number> {
    const response = await fetch(`${logged().baseUrl}/api/teams/${team.id}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await response.body?.cancel();
    return response.status;
  }

  /** How many lookups of `key` (in `table`) the logged app sent for one 404 ingest naming it. */
  async function lookupsFor(team: TestTeam, field: 'event' | 'experiment', key: string): Promise<number> {
    const from = statements.length;
    expect(await ingest(team, { participant: 'p', [field]: key })).toBe(404);
    const table = field === 'event' ? 'events' : 'experiments';
    return statements.slice(from).filter((query) => new RegExp(`from "?${table}"?`, 'i').test(query.sql) && query.parameters.includes(key)).length;
  }

  for (const field of ['event', 'experiment'] as const) {
    it(`when an ${field} key is not found, then naming it again is a 404 without a lookup — until ${BOUND} other unknown keys have been named`, async () => {
      // Arrange
      const team = await server().newTeam();
      await createExperiment(team, 'checkout');

      // Act + Assert: looked up once, then remembered
      expect(await lookupsFor(team, field, 'nope_first')).toBe(1);
      expect(await lookupsFor(team, field, 'nope_first')).toBe(0);

      // … and forgotten once the bound is passed: the flood is not all kept
      for (let i = 0; i < BOUND; i++) expect(await lookupsFor(team, field, `nope_${i}`)).toBe(1);
      expect(await lookupsFor(team, field, 'nope_first')).toBe(1);
      // The newest are still remembered.
      expect(await lookupsFor(team, field, `nope_${BOUND - 1}`)).toBe(0);
    });
  }
});

describe('the memory of unknown keys', () => {
  it('when many more keys are added than it may hold, then it holds at most its bound, the newest kept', () => {
    for (const max of [1, 2, 3, 5, 8, 1000]) {
      const unknown = new UnknownKeys(max);
      const team = unknown.of(1, 7);
      for (let i = 0; i < 5 * max + 3; i++) {
        team.add('event', `k${i}`);
        expect(unknown.size).toBeLessThanOrEqual(max);
      }
      expect(team.has('event', `k${5 * max + 2}`)).toBe(true);
      expect(team.has('event', 'k0')).toBe(false);
    }
  });

  it('when a key is unknown to one team, version or kind, then it is not unknown to another', () => {
    const unknown = new UnknownKeys(100);
    unknown.of(1, 7).add('event', 'signup');
    expect(unknown.of(1, 7).has('event', 'signup')).toBe(true);
    expect(unknown.of(2, 7).has('event', 'signup')).toBe(false);
    expect(unknown.of(1, 8).has('event', 'signup')).toBe(false);
    expect(unknown.of(1, 7).has('experiment', 'signup')).toBe(false);
  });
});
