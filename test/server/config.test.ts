import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApiClient, type components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type ConfigVariant = components['schemas']['ConfigVariant'];

/**
 * The assignment rule as the Config schema publishes it, written independently of the server:
 * h = first 4 bytes (big-endian) of SHA-256(seed ‖ ':' ‖ key); b = floor(h × 100 / 2³²);
 * the first variant, in the order given, whose cumulative share exceeds b.
 */
function sdkAssign(seed: string, participant: string, variants: ConfigVariant[]): string | null {
  const digest = createHash('sha256').update(Buffer.concat([Buffer.from(seed, 'utf8'), Buffer.from([0x3a]), Buffer.from(participant, 'utf8')])).digest();
  const h = digest.readUInt32BE(0);
  const bucket = Math.floor((h * 100) / 2 ** 32);
  let cumulative = 0;
  for (const variant of variants) {
    cumulative += variant.traffic;
    if (bucket < cumulative) return variant.key;
  }
  return null;
}

describe.each(engines)('the team config and its assignment rule on %s', (engine) => {
  const server = useServer(engine);

  interface VariantSpec {
    key: string;
    control?: boolean;
    traffic?: number | null;
  }

  /** An experiment on goal `event` with the variants, in this order, left in `status`. */
  async function experiment(team: TestTeam, key: string, event: string, variants: VariantSpec[], status: 'draft' | 'running' | 'stopped') {
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: event } });
    const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key, event } });
    expect(created.response.status).toBe(200);
    for (const variant of variants) {
      const { response } = await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
        params: { path: { ...path, experiment: key } },
        body: variant,
      });
      expect(response.status).toBe(200);
    }
    if (status !== 'draft') {
      const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: key } } });
      expect(started.response.status).toBe(200);
    }
    if (status === 'stopped') {
      const stopped = await team.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { ...path, experiment: key } } });
      expect(stopped.response.status).toBe(200);
    }
    return created.data!.data;
  }

  describe('GET /api/teams/{team}/config', () => {
    it('when the team has running, draft and stopped experiments and flags, then only the running ones and every flag are served', async () => {
      // Arrange
      const team = await server().newTeam();
      const path = { team: team.id };
      const running = await experiment(
        team,
        'checkout',
        'purchase',
        [
          { key: 'zeta', control: true },
          { key: 'alpha', traffic: 20 },
          { key: 'mid', traffic: null },
        ],
        'running',
      );
      const also = await experiment(
        team,
        'banner',
        'click',
        [
          { key: 'off', control: true, traffic: 50 },
          { key: 'on', traffic: 50 },
        ],
        'running',
      );
      await experiment(team, 'drafted', 'signup', [{ key: 'a', control: true }, { key: 'b' }], 'draft');
      await experiment(team, 'finished', 'visit', [{ key: 'a', control: true }, { key: 'b' }], 'stopped');
      await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'new_checkout', enabled: true, value: '{"colour":"green"}', description: 'not served' } });
      await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'dark_mode' } });

      // Act
      const { data, response } = await team.api.GET('/api/teams/{team}/config', { params: { path } });

      // Assert
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const config = data!.data;
      expect(config.team).toBe(team.id);
      expect(config.experiments.map((e) => e.key).sort()).toEqual(['banner', 'checkout']);
      const checkout = config.experiments.find((e) => e.key === 'checkout')!;
      expect(checkout).toEqual({
        key: 'checkout',
        seed: running.seed,
        hash_version: 2,
        conditions: {},
        coverage: 100,
        exclusion_group: null,
        event: 'purchase',
        variants: [
          { key: 'zeta', control: true, traffic: 40 },
          { key: 'alpha', control: false, traffic: 20 },
          { key: 'mid', control: false, traffic: 40 },
        ],
      });
      const banner = config.experiments.find((e) => e.key === 'banner')!;
      expect(banner.seed).toBe(also.seed);
      expect(banner.event).toBe('click');
      for (const served of config.experiments) {
        expect(served.seed).toMatch(/^[0-9a-f]{32}$/);
        expect(served.variants.reduce((sum, v) => sum + v.traffic, 0)).toBe(100);
        expect(served.variants.filter((v) => v.control)).toHaveLength(1);
      }
      expect([...config.features].sort((a, b) => (a.key < b.key ? -1 : 1))).toEqual([
        { key: 'dark_mode', type: 'string', enabled: false, value: null, rules: [] },
        { key: 'new_checkout', type: 'string', enabled: true, value: '{"colour":"green"}', rules: [] },
      ]);
    });

    it('when the seed is read from the experiment, then the config carries the same seed after a rename', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      const created = await experiment(team, 'before', 'goal', [{ key: 'a', control: true }, { key: 'b' }], 'running');
      await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'before' } }, body: { key: 'after' } });
      const fetched = await team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'after' } } });
      const { data } = await team.api.GET('/api/teams/{team}/config', { params: { path } });
      expect(data?.data.experiments).toEqual([expect.objectContaining({ key: 'after', seed: created.seed })]);
      expect(fetched.data?.data.seed).toBe(created.seed);
    });

    it('when the team has nothing, then empty lists', async () => {
      const team = await server().newTeam();
      const { data, response } = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      expect(response.status).toBe(200);
      expect(data).toEqual({ data: { team: team.id, experiments: [], features: [] } });
    });

    it("when the team's ingest key and a member's token ask, then both get the same config", async () => {
      const team = await server().newTeam();
      await experiment(team, 'exp', 'goal', [{ key: 'a', control: true }, { key: 'b' }], 'running');
      await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'flag', enabled: true } });
      const byKey = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      const byToken = await team.api.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      expect(byKey.response.status).toBe(200);
      expect(byToken.response.status).toBe(200);
      expect(byKey.data).toEqual(byToken.data);
      expect(byKey.data?.data.experiments).toHaveLength(1);
    });

    it("when another team's ingest key asks, then 403", async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      const { error, response } = await other.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      expectProblem(response, error, 403, 'Forbidden');
    });

    it("when another team's user token asks, then 403", async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      const { error, response } = await other.api.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      expectProblem(response, error, 403, 'Forbidden');
    });

    it.each(['ingest key', 'token'] as const)('when the team does not exist, then 404 (with a valid %s)', async (kind) => {
      const team = await server().newTeam();
      const client = kind === 'token' ? team.api : team.ingest;
      const { error, response } = await client.GET('/api/teams/{team}/config', { params: { path: { team: 987654321 } } });
      expectProblem(response, error, 404, 'Not Found');
    });

    it('when no credential is sent, then 401', async () => {
      const team = await server().newTeam();
      const { error, response } = await createApiClient(server().baseUrl).GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      expectProblem(response, error, 401, 'Unauthorized');
    });

    it('when an unknown credential is sent, then 401', async () => {
      const team = await server().newTeam();
      const { error, response } = await createApiClient(server().baseUrl, 'esk_notakeyanyoneissued').GET('/api/teams/{team}/config', {
        params: { path: { team: team.id } },
      });
      expectProblem(response, error, 401, 'Unauthorized');
    });

    it.each([
      ['a non-integer team', (id: number) => `/api/teams/x${id}/config`, '/path/team'],
      ['an unknown query parameter', (id: number) => `/api/teams/${id}/config?since=1`, '/query/since'],
    ])('when the request has %s, then 400 names it', async (_what, url, field) => {
      const team = await server().newTeam();
      const response = await fetch(`${server().baseUrl}${url(team.id)}`, { headers: { authorization: `Bearer ${team.ingestKey}` } });
      expectProblem(response, await response.json(), 400, 'Bad Request', [field]);
    });

    describe('when what it holds changes after it was read (each server caches it under the stored config version)', () => {
      const other = useServer(() => ({ beside: server() }));
      type Change = (team: TestTeam) => Promise<unknown>;
      type Config = components['schemas']['Config'];
      /** The path parameters of every change below: the team's experiment, its goal and its flag. */
      const at = (team: TestTeam) => ({ params: { path: { team: team.id, experiment: 'exp', event: 'goal', feature: 'flag' } } });

      /** The config as this server and a second server on the same storage serve it. */
      async function configs(team: TestTeam): Promise<Config[]> {
        const mine = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
        const theirs = await createApiClient(other().baseUrl, team.ingestKey).GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
        expect([mine.response.status, theirs.response.status]).toEqual([200, 200]);
        return [mine.data!.data, theirs.data!.data];
      }

      it.each<[string, Change, (config: Config) => void]>([
        ['a flag is created', (t) => t.api.POST('/api/teams/{team}/features', { ...at(t), body: { key: 'other', enabled: true } }), (c) => expect(c.features.map((f) => f.key)).toEqual(['flag', 'other'])],
        ['a flag is switched on', (t) => t.api.PUT('/api/teams/{team}/features/{feature}', { ...at(t), body: { enabled: true, value: 'v2' } }), (c) => expect(c.features).toEqual([{ key: 'flag', type: 'string', enabled: true, value: 'v2', rules: [] }])],
        ['a flag gets a rule', (t) => t.api.PUT('/api/teams/{team}/features/{feature}', { ...at(t), body: { rules: [{ type: 'rollout', percentage: 10, value: 'v3' }] } }), (c) => expect(c.features[0]?.rules).toEqual([{ type: 'rollout', percentage: 10, value: 'v3' }])],
        ['a flag is deleted', (t) => t.api.DELETE('/api/teams/{team}/features/{feature}', at(t)), (c) => expect(c.features).toEqual([])],
        ['the goal event is renamed', (t) => t.api.PUT('/api/teams/{team}/events/{event}', { ...at(t), body: { key: 'renamed_goal' } }), (c) => expect(c.experiments[0].event).toBe('renamed_goal')],
        ['the experiment is renamed', (t) => t.api.PUT('/api/teams/{team}/experiments/{experiment}', { ...at(t), body: { key: 'renamed' } }), (c) => expect(c.experiments.map((e) => e.key)).toEqual(['renamed'])],
        ['the experiment stops', (t) => t.api.POST('/api/teams/{team}/experiments/{experiment}/stop', at(t)), (c) => expect(c.experiments).toEqual([])],
        [
          'another experiment starts',
          async (t) => {
            const path = { team: t.id, experiment: 'second' };
            await t.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'second', event: 'goal' } });
            await t.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key: 'a', control: true } });
            await t.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key: 'b', traffic: 10 } });
            return t.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path } });
          },
          (c) => expect(c.experiments.map((e) => [e.key, e.variants.map((v) => v.traffic)])).toEqual([['exp', [50, 50]], ['second', [90, 10]]]),
        ],
      ])('when %s, then the next read on either server shows it', async (_what, change, expectChanged) => {
        // Arrange: both servers have built and kept the config
        const team = await server().newTeam();
        await experiment(team, 'exp', 'goal', [{ key: 'a', control: true }, { key: 'b' }], 'running');
        await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'flag' } });
        const before = await configs(team);
        expect(before[1]).toEqual(before[0]);

        // Act
        const changed = (await change(team)) as { response: Response };
        expect(changed.response.status).toBe(200);

        // Assert
        const after = await configs(team);
        expect(after[0]).not.toEqual(before[0]);
        expect(after[1]).toEqual(after[0]);
        expectChanged(after[0]);
      });

      it('when a change is refused, then both servers keep serving the same config', async () => {
        const team = await server().newTeam();
        await experiment(team, 'exp', 'goal', [{ key: 'a', control: true }, { key: 'b' }], 'running');
        const before = await configs(team);
        const refused = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', at(team));
        expect(refused.response.status).toBe(409);
        expect(await configs(team)).toEqual(before);
      });
    });

    it('when an SDK assigns 50 participants from the config, then ingest assigns each the same variant', async () => {
      // Arrange: uneven shares, an unset one and a 0 % one, not in key order
      const team = await server().newTeam();
      const path = { team: team.id };
      await experiment(
        team,
        'layout',
        'goal',
        [
          { key: 'base', control: true, traffic: 25 },
          { key: 'never', traffic: 0 },
          { key: 'wide', traffic: null },
          { key: 'bold', traffic: 15 },
        ],
        'running',
      );
      const { data } = await team.ingest.GET('/api/teams/{team}/config', { params: { path } });
      const layout = data!.data.experiments.find((e) => e.key === 'layout')!;
      expect(layout.variants.map((v) => [v.key, v.traffic])).toEqual([
        ['base', 25],
        ['never', 0],
        ['wide', 60],
        ['bold', 15],
      ]);
      const participants = Array.from({ length: 50 }, (_, i) => (i % 5 === 0 ? `ü-${i}@example.com` : `user-${i}`));

      // Act
      const assigned = new Map<string, string | undefined>();
      for (const participant of participants) {
        const { data: result, response } = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant } });
        expect(response.status).toBe(200);
        assigned.set(participant, result?.data.assignments.find((a) => a.experiment === 'layout')?.variant);
      }

      // Assert
      for (const participant of participants) expect(assigned.get(participant), participant).toBe(sdkAssign(layout.seed, participant, layout.variants));
      const used = new Set(assigned.values());
      expect(used.has('never')).toBe(false);
      expect(used.size).toBeGreaterThanOrEqual(2);
    });
  });
});
