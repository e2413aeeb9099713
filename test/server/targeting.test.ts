// Experiment targeting through the real server on both engines: conditions on the participant's
// attributes, coverage (and a ramp while running), exclusion groups, the config's ETag, and bad
// input refused with nothing stored. Positions and buckets are recomputed here from the published
// rule (node:crypto), independently of domain.
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type ExperimentCreate = components['schemas']['ExperimentCreate'];
type Assignment = { experiment: string; variant: string };
type Item = { status: number; data?: { assignments: Assignment[] } };

const N = 10_000;
const KEYS = Array.from({ length: N }, (_, i) => `visitor-${i}`);

/** floor(u32be(bytes) × 10 000 / 2³²) of SHA-256(text), at byte offset 0 or 4. */
function position(text: string, offset: 0 | 4): number {
  return Math.floor((createHash('sha256').update(text, 'utf8').digest().readUInt32BE(offset) * 10_000) / 2 ** 32);
}
const coveragePosition = (seed: string, key: string) => position(`${seed}:${key}`, 4);
const groupPosition = (group: string, key: string) => position(`${group}/${key}`, 0);

/**
 * Two-sided binomial bounds at z = 5.5 (normal approximation; about 4 in 100 million outside) on the
 * count of n draws at p: each experiment's seed is new, so a tighter bound would fail now and then.
 */
function binomialBounds(n: number, p: number): [number, number] {
  const spread = 5.5 * Math.sqrt(n * p * (1 - p));
  return [n * p - spread, n * p + spread];
}

describe.each(engines)('experiment targeting on %s', (engine) => {
  const server = useServer(engine);

  async function experiment(team: TestTeam, body: Omit<ExperimentCreate, 'event'>, start = true) {
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } });
    const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { ...body, event: 'goal' } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
      const added = await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: body.key } }, body: variant });
      expect(added.response.status).toBe(200);
    }
    if (start) {
      const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: body.key } } });
      expect(started.response.status, JSON.stringify(started.error)).toBe(200);
    }
    return created.data!.data;
  }

  async function put(team: TestTeam, key: string, body: components['schemas']['ExperimentUpdate']) {
    return team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: key } }, body });
  }

  /** Ingests every key through the batch ingest (500 a request); answers each key's assignments. */
  async function ingestAll(team: TestTeam, keys: string[]): Promise<Map<string, Assignment[]>> {
    const assignments = new Map<string, Assignment[]>();
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/ingest/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ items: chunk.map((participant) => ({ participant })) }),
      });
      expect(response.status).toBe(200);
      const { data } = (await response.json()) as { data: Item[] };
      data.forEach((item, j) => {
        expect(item.status).toBe(200);
        assignments.set(chunk[j]!, item.data!.assignments);
      });
    }
    return assignments;
  }

  async function ingest(team: TestTeam, body: components['schemas']['IngestRequest']) {
    const result = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body });
    expect(result.response.status, JSON.stringify(result.error)).toBe(200);
    return result.data!.data.assignments.map((a) => `${a.experiment}:${a.variant}`);
  }

  async function storedEnrolments(team: TestTeam, participant: string): Promise<string[]> {
    const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant } } });
    return data!.data.map((e) => e.experiment);
  }

  describe('conditions', () => {
    let team: TestTeam;
    beforeAll(async () => {
      team = await server().newTeam();
      await experiment(team, { key: 'dach', conditions: { country: { $in: ['DE', 'AT', 'CH'] } } });
    });

    it('when the attributes match the conditions, then the participant is enrolled', async () => {
      const assignments = await ingest(team, { participant: { key: 'anna', attributes: { country: 'DE' } } });

      expect(assignments).toEqual([expect.stringMatching(/^dach:(control|treatment)$/)]);
      expect(await storedEnrolments(team, 'anna')).toEqual(['dach']);
    });

    it('when they do not match, then nothing is stored for the experiment, and a later ingest with matching attributes enrols it', async () => {
      const before = await ingest(team, { participant: { key: 'bert', attributes: { country: 'FR' } } });
      const stored = await storedEnrolments(team, 'bert');
      const after = await ingest(team, { participant: { key: 'bert', attributes: { country: 'AT' } } });

      expect(before).toEqual([]);
      expect(stored).toEqual([]);
      expect(after).toEqual([expect.stringMatching(/^dach:/)]);
    });

    it('when the attributes change after enrolment, then the participant keeps its variant', async () => {
      const [enrolled] = await ingest(team, { participant: { key: 'carl', attributes: { country: 'CH' } } });

      const afterMove = await ingest(team, { participant: { key: 'carl', attributes: { country: 'US' } } });

      expect(afterMove).toEqual([enrolled]);
    });

    it('when a participant who does not qualify names a variant, then it is not enrolled', async () => {
      const assignments = await ingest(team, { participant: { key: 'dora', attributes: { country: 'FR' } }, experiment: 'dach', variant: 'treatment' });

      expect(assignments).toEqual([]);
      expect(await storedEnrolments(team, 'dora')).toEqual([]);
    });

    it('when the stored attributes match and the ingest gives none, then the stored ones decide', async () => {
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'emil', attributes: { country: 'DE' } } });

      expect(await ingest(team, { participant: 'emil' })).toEqual([expect.stringMatching(/^dach:/)]);
    });
  });

  describe('coverage and exclusion groups over 10 000 participants', () => {
    let team: TestTeam;
    let seeds: Record<string, string>;
    let first: Map<string, Assignment[]>;
    const enrolledIn = (assignments: Map<string, Assignment[]>, experiment: string) =>
      [...assignments].filter(([, list]) => list.some((a) => a.experiment === experiment)).map(([key]) => key);
    const variantIn = (assignments: Map<string, Assignment[]>, experiment: string, key: string) => assignments.get(key)!.find((a) => a.experiment === experiment)?.variant;

    beforeAll(async () => {
      team = await server().newTeam();
      seeds = {
        ramp: (await experiment(team, { key: 'ramp', coverage: 20 })).seed,
        tiny: (await experiment(team, { key: 'tiny', coverage: 0.1 })).seed,
        left: (await experiment(team, { key: 'left', exclusion_group: { key: 'checkout', start: 0, end: 50 } })).seed,
        right: (await experiment(team, { key: 'right', exclusion_group: { key: 'checkout', start: 50, end: 100 } })).seed,
      };
      first = await ingestAll(team, KEYS);
    });

    it('when coverage is 20 %, then the participants that enter are within binomial bounds and exactly those the published rule covers', () => {
      const entered = enrolledIn(first, 'ramp');

      const [low, high] = binomialBounds(N, 0.2);
      expect(entered.length).toBeGreaterThan(low);
      expect(entered.length).toBeLessThan(high);
      expect(entered).toEqual(KEYS.filter((key) => coveragePosition(seeds.ramp!, key) < 2000));
    });

    it('when coverage is 0.1 %, then the few that enter are those the rule covers', () => {
      const entered = enrolledIn(first, 'tiny');

      // About 10 of the 10 000; none at all, 1 seed in 22 000, is not checked against.
      expect(entered.length).toBeLessThan(30);
      expect(entered).toEqual(KEYS.filter((key) => coveragePosition(seeds.tiny!, key) < 10));
    });

    it('when two running experiments hold disjoint ranges of a group, then they share no participant and split the group as its positions do', () => {
      const left = new Set(enrolledIn(first, 'left'));
      const right = enrolledIn(first, 'right');

      expect(right.filter((key) => left.has(key))).toEqual([]);
      expect(left.size + right.length).toBe(N);
      expect([...left]).toEqual(KEYS.filter((key) => groupPosition('checkout', key) < 5000));
    });

    it('when coverage is ramped from 20 to 50 % while running, then every enrolled participant keeps its variant, the new ones are within bounds and exactly those the rule covers, and the results show the change', async () => {
      const ramped = await put(team, 'ramp', { coverage: 50 });
      const second = await ingestAll(team, KEYS);

      expect(ramped.response.status).toBe(200);
      expect(ramped.data!.data.coverage).toBe(50);
      for (const key of enrolledIn(first, 'ramp')) expect(variantIn(second, 'ramp', key)).toBe(variantIn(first, 'ramp', key));
      const [low, high] = binomialBounds(N, 0.5);
      const entered = enrolledIn(second, 'ramp');
      expect(entered.length).toBeGreaterThan(low);
      expect(entered.length).toBeLessThan(high);
      expect(entered).toEqual(KEYS.filter((key) => coveragePosition(seeds.ramp!, key) < 5000));
      const results = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'ramp' } } });
      expect(results.data!.data.coverage).toBe(50);
      expect(results.data!.data.coverage_changes).toEqual([{ at: expect.any(String), from: 20, to: 50 }]);
      expect(results.data!.data.participants).toBe(entered.length);
    });
  });

  describe('exclusion group conflicts', () => {
    it('when a draft whose range overlaps a running experiment of the group starts, then 409 names the running one', async () => {
      const team = await server().newTeam();
      await experiment(team, { key: 'first', exclusion_group: { key: 'pricing', start: 0, end: 60 } });
      await experiment(team, { key: 'second', exclusion_group: { key: 'pricing', start: 50, end: 100 } }, false);

      const { response, error } = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: team.id, experiment: 'second' } } });

      expectProblem(response, error, 409, 'Conflict');
      expect(error!.detail).toContain("'first'");
      const second = await team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: 'second' } } });
      expect(second.data!.data.status).toBe('draft');
    });

    it('when a running experiment is moved onto the range of another running one, then 409 names it and the range stays', async () => {
      const team = await server().newTeam();
      await experiment(team, { key: 'low', exclusion_group: { key: 'pricing', start: 0, end: 50 } });
      await experiment(team, { key: 'high', exclusion_group: { key: 'pricing', start: 50, end: 100 } });

      const { response, error } = await put(team, 'high', { exclusion_group: { key: 'pricing', start: 40, end: 100 } });

      expectProblem(response, error, 409, 'Conflict');
      expect(error!.detail).toContain("'low'");
      const high = await team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: 'high' } } });
      expect(high.data!.data.exclusion_group).toEqual({ key: 'pricing', start: 50, end: 100 });
    });

    it('when ranges move so that an enrolled participant falls in another running experiment of the group, then it still enters no other', async () => {
      const team = await server().newTeam();
      await experiment(team, { key: 'low', exclusion_group: { key: 'pricing', start: 0, end: 50 } });
      await experiment(team, { key: 'high', exclusion_group: { key: 'pricing', start: 50, end: 100 } });
      const participant = KEYS.find((key) => groupPosition('pricing', key) >= 2500 && groupPosition('pricing', key) < 5000)!;
      const before = await ingest(team, { participant });
      expect((await put(team, 'low', { exclusion_group: { key: 'pricing', start: 0, end: 25 } })).response.status).toBe(200);
      expect((await put(team, 'high', { exclusion_group: { key: 'pricing', start: 25, end: 100 } })).response.status).toBe(200);

      const after = await ingest(team, { participant });

      expect(before).toEqual([expect.stringMatching(/^low:/)]);
      expect(after).toEqual(before);
    });

    it('when drafts overlap, then both are stored', async () => {
      const team = await server().newTeam();
      await experiment(team, { key: 'one', exclusion_group: { key: 'pricing', start: 0, end: 60 } }, false);

      const two = await experiment(team, { key: 'two', exclusion_group: { key: 'pricing', start: 50.5, end: 100 } }, false);

      expect(two.exclusion_group).toEqual({ key: 'pricing', start: 50.5, end: 100 });
    });
  });

  describe('GET /api/teams/{team}/config: ETag', () => {
    async function config(team: TestTeam, ifNoneMatch?: string) {
      return fetch(`${server().baseUrl}/api/teams/${team.id}/config`, {
        headers: { authorization: `Bearer ${team.ingestKey}`, ...(ifNoneMatch && { 'if-none-match': ifNoneMatch }) },
      });
    }

    it('when nothing changes, then the ETag stays; after a change it is new; a matching If-None-Match is 304 without a body', async () => {
      const team = await server().newTeam();
      await experiment(team, { key: 'banner', coverage: 30, conditions: { plan: 'pro' }, exclusion_group: { key: 'home', start: 0, end: 25 } });

      const one = await config(team);
      const two = await config(team);
      const notModified = await config(team, one.headers.get('etag')!);
      await put(team, 'banner', { coverage: 40 });
      const changed = await config(team, one.headers.get('etag')!);

      expect(one.status).toBe(200);
      const served = ((await one.json()) as { data: components['schemas']['Config'] }).data.experiments[0];
      expect(served).toMatchObject({ key: 'banner', hash_version: 2, coverage: 30, conditions: { plan: 'pro' }, exclusion_group: { key: 'home', start: 0, end: 25 } });
      expect(one.headers.get('etag')).toMatch(/^"[0-9]+\.[0-9]+"$/);
      expect(two.headers.get('etag')).toBe(one.headers.get('etag'));
      expect(notModified.status).toBe(304);
      expect(await notModified.text()).toBe('');
      expect(notModified.headers.get('etag')).toBe(one.headers.get('etag'));
      expect(changed.status).toBe(200);
      expect(changed.headers.get('etag')).not.toBe(one.headers.get('etag'));
      expect(((await changed.json()) as { data: components['schemas']['Config'] }).data.experiments[0]!.coverage).toBe(40);
    });

    it('when If-None-Match names another version (or a weak form of this one), then 200 (or 304)', async () => {
      const team = await server().newTeam();
      const current = (await config(team)).headers.get('etag')!;

      expect((await config(team, '"0.0", "1.999999"')).status).toBe(200);
      expect((await config(team, `"0.0", W/${current}`)).status).toBe(304);
    });
  });

  describe('bad input', () => {
    async function create(team: TestTeam, body: Record<string, unknown>) {
      const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/experiments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${team.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ key: 'bad', event: 'goal', ...body }),
      });
      return { response, body: await response.json() };
    }

    it.each([
      ['a coverage with three decimals', { coverage: 20.005 }, '/body/coverage'],
      ['a coverage above 100', { coverage: 100.5 }, '/body/coverage'],
      ['a range that ends where it starts', { exclusion_group: { key: 'g', start: 30, end: 30 } }, '/body/exclusion_group/end'],
      ['a range start with three decimals', { exclusion_group: { key: 'g', start: 0.001, end: 30 } }, '/body/exclusion_group/start'],
      ['a range without a key', { exclusion_group: { start: 0, end: 30 } }, '/body/exclusion_group/key'],
      ['an unknown condition operator', { conditions: { country: { $near: 'DE' } } }, '/body/conditions/country/$near'],
      ['a pattern RE2 cannot compile', { conditions: { name: { $regex: '(a' } } }, '/body/conditions/name/$regex'],
      ['an oversized condition', { conditions: { $or: Array.from({ length: 1001 }, (_, i) => ({ n: i })) } }, '/body/conditions/$or'],
    ])('when an experiment is created with %s, then 400 names the field and nothing is stored', async (_, input, field) => {
      const team = await server().newTeam();
      await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'goal' } });

      const { response, body } = await create(team, input);

      expectProblem(response, body, 400, 'Bad Request', [field]);
      const list = await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } });
      expect(list.data!.data).toEqual([]);
    });

    it('when an update carries a bad coverage beside a good description, then 400 and nothing of it is stored', async () => {
      const team = await server().newTeam();
      await experiment(team, { key: 'kept', coverage: 20 });

      const { response, error } = await put(team, 'kept', { description: 'changed', coverage: 33.333 });

      expectProblem(response, error, 400, 'Bad Request', ['/body/coverage']);
      const kept = await team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: 'kept' } } });
      expect(kept.data!.data).toMatchObject({ description: null, coverage: 20 });
      const results = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'kept' } } });
      expect(results.data!.data.coverage_changes).toEqual([]);
    });
  });
});
