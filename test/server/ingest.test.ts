import { describe, expect, it } from 'vitest';
import { createApiClient, type components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, expectedVariant, ingestOk, stopExperiment } from '../support/fixtures';
import type { TestTeam } from '../support/team';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];

/** An ingest whose status the test checks. */
function tryIngest(team: TestTeam, body: IngestRequest) {
  return team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body });
}

/** `n`, and `c`/`x` per event, of both variants. */
async function counts(team: TestTeam, experimentKey: string) {
  const out: Record<string, { participants: number; events: Record<string, [number, number]> }> = {};
  for (const variant of ['control', 'treatment']) {
    const { data, response } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
      params: { path: { team: team.id, experiment: experimentKey, variant } },
    });
    expect(response.status).toBe(200);
    out[variant] = {
      participants: data!.data.participants,
      events: Object.fromEntries(data!.data.events.map((e) => [e.event, [e.conversions, e.unique_conversions]])),
    };
  }
  return out;
}

async function participant(team: TestTeam, key: string) {
  return team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: key } } });
}

async function participantsCount(team: TestTeam) {
  const { data } = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
  return data!.data.participants_count;
}

describe.each(engines)('ingest on %s', (engine) => {
  const server = useServer(engine);

  describe('step 1: the participant', () => {
    it('when the participant is a new key, then it is created and the answer holds it', async () => {
      const team = await server().newTeam();
      const data = await ingestOk(team, { participant: 'José' });
      expect(data).toEqual({
        participant: { key: 'José', notes: null, attributes: {}, created_at: expect.any(String), updated_at: expect.any(String) },
        assignments: [],
      });
      const read = await participant(team, 'José');
      expect(read.data?.data).toMatchObject({ key: 'José', notes: null, attributes: {} });
    });

    it('when the participant is an object with notes and attributes, then they are stored', async () => {
      const team = await server().newTeam();
      const data = await ingestOk(team, { participant: { key: '用户-42', notes: 'VIP', attributes: { plan: 'pro', seats: 3, beta: true } } });
      expect(data.participant).toMatchObject({ key: '用户-42', notes: 'VIP', attributes: { plan: 'pro', seats: 3, beta: true } });
      const read = await participant(team, '用户-42');
      expect(read.data?.data).toMatchObject({ notes: 'VIP', attributes: { plan: 'pro', seats: 3, beta: true } });
    });

    it('when an existing participant is ingested with notes or attributes, then only the given ones change', async () => {
      const team = await server().newTeam();
      await ingestOk(team, { participant: { key: 'user-1', notes: 'first', attributes: { plan: 'free', country: 'DE' } } });

      const notesOnly = await ingestOk(team, { participant: { key: 'user-1', notes: 'second' } });
      expect(notesOnly.participant).toMatchObject({ notes: 'second', attributes: { plan: 'free', country: 'DE' } });

      const attributesOnly = await ingestOk(team, { participant: { key: 'user-1', attributes: { plan: 'pro' } } });
      expect(attributesOnly.participant).toMatchObject({ notes: 'second', attributes: { plan: 'pro' } });

      const read = await participant(team, 'user-1');
      expect(read.data?.data).toMatchObject({ notes: 'second', attributes: { plan: 'pro' } });
    });

    it('when an existing participant is ingested without notes or attributes, then it is unchanged', async () => {
      const team = await server().newTeam();
      const first = await ingestOk(team, { participant: { key: 'user-1', notes: 'kept', attributes: { plan: 'pro' } } });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const asString = await ingestOk(team, { participant: 'user-1' });
      const asObject = await ingestOk(team, { participant: { key: 'user-1' } });
      expect(asString.participant).toEqual(first.participant);
      expect(asObject.participant).toEqual(first.participant);
    });

    it('when the participant key is invalid, then 400 and nothing is stored', async () => {
      const team = await server().newTeam();
      for (const key of ['has space', 'a/b', '', 'k'.repeat(256)]) {
        const { response, error } = await tryIngest(team, { participant: key });
        expect(response.status).toBe(400);
        expect(error?.errors?.some((e) => e.path.startsWith('/body/participant'))).toBe(true);
      }
      expect(await participantsCount(team)).toBe(0);
    });
  });

  describe('step 2: enrolment', () => {
    it('when no experiment is named, then the participant is enrolled in every running experiment only', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'running_a');
      await createExperiment(team, 'draft', { start: false });
      await createExperiment(team, 'stopped');
      await stopExperiment(team, 'stopped');
      await createExperiment(team, 'running_b');

      const data = await ingestOk(team, { participant: 'user-1' });
      expect(data.assignments.map((a) => [a.experiment, a.status])).toEqual([
        ['running_a', 'running'],
        ['running_b', 'running'],
      ]);
      const list = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant: 'user-1' } } });
      expect(list.data?.data).toEqual(data.assignments);
      for (const key of ['draft', 'stopped']) expect((await counts(team, key)).control.participants + (await counts(team, key)).treatment.participants).toBe(0);
    });

    it('when participants are assigned by hash, then each gets the variant the published rule gives', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const config = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      const { seed, variants } = config.data!.data.experiments[0];
      const keys = Array.from({ length: 40 }, (_, i) => (i % 2 ? `user-${i}` : `José-${i}`));
      for (const key of keys) {
        const data = await ingestOk(team, { participant: key });
        expect(data.assignments.map((a) => a.variant)).toEqual([expectedVariant(seed, key, variants)]);
      }
    });

    it('when the same participant is ingested again, then its assignments stay and it is counted once', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_a');
      await createExperiment(team, 'exp_b');
      const keys = Array.from({ length: 10 }, (_, i) => `user-${i}`);
      const first = new Map<string, unknown>();
      for (const key of keys) first.set(key, (await ingestOk(team, { participant: key })).assignments);
      const before = { a: await counts(team, 'exp_a'), b: await counts(team, 'exp_b') };
      expect(before.a.control.participants + before.a.treatment.participants).toBe(10);

      for (const key of keys) {
        expect((await ingestOk(team, { participant: key })).assignments).toEqual(first.get(key));
        expect((await ingestOk(team, { participant: key, experiment: 'exp_a' })).assignments).toEqual(first.get(key));
      }
      expect({ a: await counts(team, 'exp_a'), b: await counts(team, 'exp_b') }).toEqual(before);
    });

    it('when an experiment is named, then the participant is enrolled in that one only', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_a');
      await createExperiment(team, 'exp_b');
      const data = await ingestOk(team, { participant: 'user-1', experiment: 'exp_b' });
      expect(data.assignments.map((a) => a.experiment)).toEqual(['exp_b']);
      const a = await counts(team, 'exp_a');
      expect(a.control.participants + a.treatment.participants).toBe(0);
    });

    it.each(['draft', 'stopped'])('when the named experiment is %s, then 409 and nothing is stored', async (status) => {
      const team = await server().newTeam();
      await createExperiment(team, 'other');
      await createExperiment(team, 'target', { start: status !== 'draft' });
      if (status === 'stopped') await stopExperiment(team, 'target');
      const before = await counts(team, 'other');

      const { response, error } = await tryIngest(team, { participant: { key: 'user-1', notes: 'x' }, experiment: 'target', event: 'goal' });
      expect(response.status).toBe(409);
      expect(error).toMatchObject({ status: 409, title: 'Conflict' });
      expect((await participant(team, 'user-1')).response.status).toBe(404);
      expect(await participantsCount(team)).toBe(0);
      expect(await counts(team, 'other')).toEqual(before);
    });

    it('audit, a 0 % variant: when a client chooses a variant with traffic 0, singly or in a batch, then 409 names the variant, nothing is stored, and the sample-ratio check still sees the split as the traffic says', async () => {
      // Arrange: control and treatment share the traffic; dark has 0 %
      const team = await server().newTeam();
      const path = { team: team.id, experiment: 'exp' };
      await createExperiment(team, 'exp', { start: false });
      expect((await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key: 'dark', traffic: 0 } })).response.status).toBe(200);
      expect((await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path } })).response.status).toBe(200);

      // Act
      const single = await tryIngest(team, { participant: 'user-1', experiment: 'exp', variant: 'dark', event: 'goal' });
      const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', {
        params: { path: { team: team.id } },
        body: { items: [{ participant: 'user-2', experiment: 'exp', variant: 'dark' }, { participant: 'user-3', experiment: 'exp', variant: 'treatment' }] },
      });

      // Assert
      expect(single.response.status).toBe(409);
      expect(single.error).toMatchObject({ status: 409, title: 'Conflict', detail: expect.stringContaining("Variant 'dark'") });
      expect(batch.data!.data.map((item) => item.status)).toEqual([409, 200]);
      expect(batch.data!.data[0]!.error).toMatchObject({ status: 409, detail: expect.stringContaining("Variant 'dark'") });
      for (const key of ['user-1', 'user-2']) expect((await participant(team, key)).response.status).toBe(404);
      const dark = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { ...path, variant: 'dark' } } });
      expect(dark.data!.data.participants).toBe(0);
      expect(dark.data!.data.srm.p_value).toBeGreaterThan(0);
    });

    it('when a variant is sent without an experiment, then 400 and nothing is stored', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const { response, error } = await tryIngest(team, { participant: 'user-1', variant: 'treatment' } as never);
      expect(response.status).toBe(400);
      expect(error?.status).toBe(400);
      expect((await participant(team, 'user-1')).response.status).toBe(404);
    });

    it('when the client chose a variant, then that variant is recorded', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      for (let i = 0; i < 4; i++) {
        const data = await ingestOk(team, { participant: `user-${i}`, experiment: 'exp', variant: 'treatment' });
        expect(data.assignments.map((a) => a.variant)).toEqual(['treatment']);
      }
      const control = await ingestOk(team, { participant: 'user-c', experiment: 'exp', variant: 'control' });
      expect(control.assignments.map((a) => a.variant)).toEqual(['control']);
      const stats = await counts(team, 'exp');
      expect([stats.control.participants, stats.treatment.participants]).toEqual([1, 4]);
    });

    it('when the client chooses another variant than the one already assigned, then the assignment stays and is returned', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const first = await ingestOk(team, { participant: 'user-1', experiment: 'exp', variant: 'control' });
      const second = await ingestOk(team, { participant: 'user-1', experiment: 'exp', variant: 'treatment' });
      expect(second.assignments).toEqual(first.assignments);
      expect(second.assignments[0].variant).toBe('control');
      const stats = await counts(team, 'exp');
      expect([stats.control.participants, stats.treatment.participants]).toEqual([1, 0]);
    });

    it('when an excluded participant is ingested with that experiment, then 200 and it stays out', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'user-1', experiment: 'exp' });
      await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: 'user-1', experiment: 'exp' } },
      });
      const before = await counts(team, 'exp');

      const { response, data } = await tryIngest(team, { participant: 'user-1', experiment: 'exp', variant: 'treatment', event: 'goal' });
      expect(response.status).toBe(200);
      expect(data?.data.assignments).toEqual([]);
      expect(await counts(team, 'exp')).toEqual(before);
    });
  });

  describe('step 3: the event', () => {
    it('when an event is sent, then one conversion is counted in each running experiment the participant is in', async () => {
      const team = await server().newTeam();
      await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'purchase' } });
      await createExperiment(team, 'exp_a');
      await createExperiment(team, 'exp_b');

      const first = await ingestOk(team, { participant: 'user-1', event: 'purchase' });
      await ingestOk(team, { participant: 'user-1', event: 'purchase' });
      await ingestOk(team, { participant: 'user-1', event: 'goal' });

      for (const assignment of first.assignments) {
        const stats = await counts(team, assignment.experiment);
        const other = assignment.variant === 'control' ? 'treatment' : 'control';
        expect(stats[assignment.variant]).toEqual({ participants: 1, events: { goal: [1, 1], purchase: [2, 1] } });
        expect(stats[other]).toEqual({ participants: 0, events: { goal: [0, 0], purchase: [0, 0] } });
      }
    });

    it('when an event is sent with an experiment, then the conversion is counted only there', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_a');
      await createExperiment(team, 'exp_b');
      await ingestOk(team, { participant: 'user-1', experiment: 'exp_a', variant: 'control' });
      await ingestOk(team, { participant: 'user-1', experiment: 'exp_b', variant: 'control' });

      const data = await ingestOk(team, { participant: 'user-1', experiment: 'exp_b', event: 'goal' });
      expect(data.assignments.map((a) => a.experiment)).toEqual(['exp_a', 'exp_b']);
      expect((await counts(team, 'exp_a')).control.events.goal).toEqual([0, 0]);
      expect((await counts(team, 'exp_b')).control.events.goal).toEqual([1, 1]);
    });

    it('when the experiment is stopped, then it takes no new conversions and leaves the answer', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_old');
      await ingestOk(team, { participant: 'user-1', experiment: 'exp_old', variant: 'treatment', event: 'goal' });
      await stopExperiment(team, 'exp_old');
      await createExperiment(team, 'exp_new');
      const before = await counts(team, 'exp_old');

      const data = await ingestOk(team, { participant: 'user-1', event: 'goal' });
      expect(data.assignments.map((a) => a.experiment)).toEqual(['exp_new']);
      expect(await counts(team, 'exp_old')).toEqual(before);
      expect(before.treatment.events.goal).toEqual([1, 1]);
      const newStats = await counts(team, 'exp_new');
      expect(newStats[data.assignments[0].variant].events.goal).toEqual([1, 1]);
    });
  });

  describe('step 4: the answer', () => {
    it('when an experiment is named, then the answer still holds every assignment in running experiments', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_a');
      await createExperiment(team, 'exp_stopped');
      await ingestOk(team, { participant: 'user-1' });
      await stopExperiment(team, 'exp_stopped');
      await createExperiment(team, 'exp_b');

      const data = await ingestOk(team, { participant: { key: 'user-1', notes: 'n' }, experiment: 'exp_b', variant: 'treatment' });
      expect(data.participant).toMatchObject({ key: 'user-1', notes: 'n' });
      expect(data.assignments.map((a) => [a.experiment, a.status])).toEqual([
        ['exp_a', 'running'],
        ['exp_b', 'running'],
      ]);
      expect(data.assignments[1].variant).toBe('treatment');
    });
  });

  describe('concurrency', () => {
    it('when participants enrolled in the same experiments in opposite orders convert at once, then every ingest succeeds and counts', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_a');
      await createExperiment(team, 'exp_b');
      const keys = Array.from({ length: 24 }, (_, i) => `user-${i}`);
      for (const [i, key] of keys.entries()) {
        for (const key2 of i % 2 ? ['exp_a', 'exp_b'] : ['exp_b', 'exp_a']) await ingestOk(team, { participant: key, experiment: key2, variant: 'control' });
      }

      const results = await Promise.all(keys.map((key) => tryIngest(team, { participant: key, event: 'goal' })));

      expect(results.map((r) => r.response.status)).toEqual(keys.map(() => 200));
      for (const key of ['exp_a', 'exp_b']) expect((await counts(team, key)).control).toEqual({ participants: 24, events: { goal: [24, 24] } });
    });

    it('when the same new participant is ingested many times at once, then it is created, enrolled and counted once', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const results = await Promise.all(Array.from({ length: 12 }, () => tryIngest(team, { participant: 'José', event: 'goal' })));
      expect(results.map((r) => r.response.status)).toEqual(results.map(() => 200));
      const variants = new Set(results.map((r) => r.data?.data.assignments[0].variant));
      expect(variants.size).toBe(1);
      const [variant] = [...variants] as string[];
      expect((await counts(team, 'exp'))[variant]).toEqual({ participants: 1, events: { goal: [12, 1] } });
      expect(await participantsCount(team)).toBe(1);
    });
  });

  describe('credentials', () => {
    it("when the team's ingest key or a member's API token is sent, then 200", async () => {
      const team = await server().newTeam();
      const byKey = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: 'a' } });
      const byToken = await team.api.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: 'b' } });
      expect([byKey.response.status, byToken.response.status]).toEqual([200, 200]);
      expect(await participantsCount(team)).toBe(2);
    });

    it("when another team's ingest key or token is sent, then 404 and nothing is stored", async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      for (const client of [other.ingest, other.api]) {
        const { response, error } = await client.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: 'intruder' } });
        expect(response.status).toBe(404);
        expect(error?.status).toBe(404);
      }
      expect(await participantsCount(team)).toBe(0);
      expect(await participantsCount(other)).toBe(0);
    });

    it('when no or an unknown credential is sent, then 401 with WWW-Authenticate', async () => {
      const team = await server().newTeam();
      for (const client of [createApiClient(server().baseUrl), createApiClient(server().baseUrl, 'not-a-real-key')]) {
        const { response, error } = await client.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: 'user-1' } });
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(error?.status).toBe(401);
      }
      expect(await participantsCount(team)).toBe(0);
    });
  });

  describe('unknown references', () => {
    it.each([
      ['event', { event: 'nope' }],
      ['experiment', { experiment: 'nope', event: 'goal' }],
      ['variant', { experiment: 'exp', variant: 'nope', event: 'goal' }],
    ])('when the %s is unknown, then 404 and nothing at all is stored', async (what, refs) => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'known' });
      const before = { count: await participantsCount(team), stats: await counts(team, 'exp'), known: (await participant(team, 'known')).data?.data };

      const fresh = await tryIngest(team, { participant: { key: 'fresh', notes: 'x' }, ...refs } as IngestRequest);
      expect(fresh.response.status).toBe(404);
      expect(fresh.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(fresh.error).toMatchObject({ status: 404, title: 'Not Found' });
      expect(fresh.error?.detail).toContain('nope');
      const known = await tryIngest(team, { participant: { key: 'known', notes: 'changed', attributes: { a: 1 } }, ...refs } as IngestRequest);
      expect(known.response.status, what).toBe(404);

      expect((await participant(team, 'fresh')).response.status).toBe(404);
      expect(await participantsCount(team)).toBe(before.count);
      expect(await counts(team, 'exp')).toEqual(before.stats);
      expect((await participant(team, 'known')).data?.data).toEqual(before.known);
    });

    it('when the event is unknown and no experiment is named, then the participant is not enrolled anywhere', async () => {
      const team = await server().newTeam();
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1' } });
      await createExperiment(team, 'exp');
      const { response } = await tryIngest(team, { participant: 'user-1', event: 'nope' });
      expect(response.status).toBe(404);
      expect((await participant(team, 'user-1')).data?.data.experiments).toEqual([]);
    });
  });

  describe('when what ingest reads changes (each server keeps it under the stored config version)', () => {
    const other = useServer(() => ({ beside: server() }));
    type Check = (ingest: (body: IngestRequest) => Promise<{ status: number; result?: IngestOutcome }>) => Promise<void>;
    const at = (team: TestTeam, event = 'goal') => ({ params: { path: { team: team.id, experiment: 'exp', event } } });

    /** An ingest sent to this server and one sent to a second server on the same storage. */
    function onBothServers(team: TestTeam) {
      return [team.ingest, createApiClient(other().baseUrl, team.ingestKey)].map((client) => async (body: IngestRequest) => {
        const { data, response } = await client.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body });
        return { status: response.status, result: data?.data };
      });
    }

    let participants = 0;
    const fresh = () => `p-${++participants}`;
    const enrolledIn = async (ingest: Parameters<Check>[0], event: string) => {
      const { status, result } = await ingest({ participant: fresh(), event });
      expect(status).toBe(200);
      return result!.assignments.map((a) => a.experiment);
    };

    it.each<[string, (team: TestTeam) => Promise<{ response: Response }>, Check]>([
      [
        'the experiment stops',
        (t) => t.api.POST('/api/teams/{team}/experiments/{experiment}/stop', at(t)),
        async (ingest) => {
          expect(await enrolledIn(ingest, 'goal')).toEqual([]);
          expect((await ingest({ participant: fresh(), experiment: 'exp', variant: 'treatment' })).status).toBe(409);
        },
      ],
      [
        'another experiment starts',
        async (t) => {
          await createExperiment(t, 'second', { event: 'click', start: false });
          return t.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: t.id, experiment: 'second' } } });
        },
        async (ingest) => expect(await enrolledIn(ingest, 'click')).toEqual(['exp', 'second']),
      ],
      [
        'the experiment is renamed',
        (t) => t.api.PUT('/api/teams/{team}/experiments/{experiment}', { ...at(t), body: { key: 'renamed' } }),
        async (ingest) => {
          expect(await enrolledIn(ingest, 'goal')).toEqual(['renamed']);
          expect((await ingest({ participant: fresh(), experiment: 'exp' })).status).toBe(404);
          const named = await ingest({ participant: fresh(), experiment: 'renamed', variant: 'treatment' });
          expect(named.result?.assignments.map((a) => [a.experiment, a.variant])).toEqual([['renamed', 'treatment']]);
        },
      ],
      [
        'an event is renamed',
        (t) => t.api.PUT('/api/teams/{team}/events/{event}', { ...at(t, 'click'), body: { key: 'tap' } }),
        async (ingest) => {
          expect((await ingest({ participant: fresh(), event: 'click' })).status).toBe(404);
          expect(await enrolledIn(ingest, 'tap')).toEqual(['exp']);
        },
      ],
      ['an event is deleted', (t) => t.api.DELETE('/api/teams/{team}/events/{event}', at(t, 'click')), async (ingest) => expect((await ingest({ participant: fresh(), event: 'click' })).status).toBe(404)],
    ])('when %s, then the next ingest on either server acts on it', async (_what, change, check) => {
      // Arrange: both servers have ingested both events of the team under its running experiment
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'click' } });
      for (const ingest of onBothServers(team)) {
        expect(await enrolledIn(ingest, 'goal')).toEqual(['exp']);
        expect(await enrolledIn(ingest, 'click')).toEqual(['exp']);
        expect((await ingest({ participant: fresh(), experiment: 'exp', variant: 'control' })).status).toBe(200);
      }

      // Act
      const changed = await change(team);
      expect(changed.response.status).toBe(200);

      // Assert
      for (const ingest of onBothServers(team)) await check(ingest);
    });
  });

  describe('request bodies', () => {
    const post = (team: TestTeam, body: string, contentType: string) =>
      fetch(`${server().baseUrl}/api/teams/${team.id}/ingest`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${team.ingestKey}`, 'Content-Type': contentType },
        body,
      });

    it('when the body has an unknown property, at the top or in the participant, then 400 and nothing is stored', async () => {
      const team = await server().newTeam();
      const top = await tryIngest(team, { participant: 'user-1', timestamp: 1 } as never);
      expect(top.response.status).toBe(400);
      expect(top.error?.errors?.length).toBeGreaterThan(0);
      const nested = await tryIngest(team, { participant: { key: 'user-1', email: 'x@example.com' } } as never);
      expect(nested.response.status).toBe(400);
      expect(await participantsCount(team)).toBe(0);
    });

    it('when participant is missing, then 400 names it', async () => {
      const team = await server().newTeam();
      const { response, error } = await tryIngest(team, { event: 'goal' } as never);
      expect(response.status).toBe(400);
      expect(JSON.stringify(error?.errors)).toContain('participant');
    });

    it('when the body is sent as application/vnd.api+json, then it is accepted like JSON', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const response = await post(team, JSON.stringify({ participant: 'José', event: 'goal' }), 'application/vnd.api+json');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await response.json()) as { data: components['schemas']['IngestOutcome'] };
      expect(body.data.participant.key).toBe('José');
      expect(body.data.assignments).toHaveLength(1);
    });

    it('when the body is over 64 KiB, then 413 and nothing is stored', async () => {
      const team = await server().newTeam();
      const response = await post(team, JSON.stringify({ participant: { key: 'user-1', notes: 'x'.repeat(65 * 1024) } }), 'application/json');
      expect(response.status).toBe(413);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await response.json()).toMatchObject({ status: 413 });
      expect((await participant(team, 'user-1')).response.status).toBe(404);
    });

    it('when a valid body is just under 64 KiB, then it is accepted', async () => {
      const team = await server().newTeam();
      const attributes = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${'n'.repeat(97)}${String(i).padStart(3, '0')}`, 'v'.repeat(1000)]));
      const body = JSON.stringify({ participant: { key: 'user-1', attributes } });
      expect(body.length).toBeGreaterThan(50_000);
      expect(body.length).toBeLessThan(64 * 1024);
      const response = await post(team, body, 'application/json');
      expect(response.status).toBe(200);
    });

    it('when the body is text/plain, then 415 and nothing is stored', async () => {
      const team = await server().newTeam();
      const response = await post(team, JSON.stringify({ participant: 'user-1' }), 'text/plain');
      expect(response.status).toBe(415);
      expect(await response.json()).toMatchObject({ status: 415 });
      expect(await participantsCount(team)).toBe(0);
    });

    it('when the body is not valid JSON, then 400', async () => {
      const team = await server().newTeam();
      const response = await post(team, '{"participant": ', 'application/json');
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ status: 400 });
    });
  });
});
