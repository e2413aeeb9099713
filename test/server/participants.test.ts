import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, ingestOk, stopExperiment } from '../support/fixtures';
import type { TestTeam } from '../support/team';

type IngestRequest = components['schemas']['IngestRequest'];


/** `n`, `c` and `x` of both variants on the experiment's goal event. */
async function counts(team: TestTeam, experimentKey: string) {
  const out: Record<string, { participants: number; conversions: number; unique_conversions: number }> = {};
  for (const variant of ['control', 'treatment']) {
    const { data, response } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
      params: { path: { team: team.id, experiment: experimentKey, variant } },
    });
    expect(response.status).toBe(200);
    const goal = data!.data.events[0];
    out[variant] = { participants: data!.data.participants, conversions: goal.conversions, unique_conversions: goal.unique_conversions };
  }
  return out;
}

describe.each(engines)('participants on %s', (engine) => {
  const server = useServer(engine);

  describe('POST /api/teams/{team}/participants', () => {
    it.each([
      ['a UUID', '0b9a3f0e-7c1d-4e7a-9b55-2f1c8d6e4a10'],
      ['an e-mail address', 'jane.doe+test@example.com'],
      ['a non-ASCII name', 'José'],
      ['a CJK id', '用户-42'],
      ['characters that need percent-encoding', 'a?b=1&c#d%e'],
      ['255 characters', 'k'.repeat(255)],
    ])('when the key is %s, then it is created and answers at its (percent-encoded) path', async (_, key) => {
      const team = await server().newTeam();
      const created = await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key } });
      expect(created.response.status).toBe(200);
      expect(created.data?.data).toMatchObject({ key, notes: null, attributes: {} });
      expect(created.data!.data.created_at).toBe(created.data!.data.updated_at);

      const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: key } } });
      expect(read.response.status).toBe(200);
      expect(read.data?.data).toMatchObject({ key, experiments: [] });
    });

    it.each([
      ['contains a space', 'jane doe'],
      ['contains a slash', 'team/jane'],
      ['contains a tab', 'jane\tdoe'],
      ['is empty', ''],
      ['has 256 characters', 'k'.repeat(256)],
    ])('when the key %s, then 400 names /body/key and nothing is created', async (_, key) => {
      const team = await server().newTeam();
      const { response, error } = await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key } });
      expect(response.status).toBe(400);
      expect(error?.errors?.map((e) => e.path)).toContain('/body/key');
      const list = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id } } });
      expect(list.data?.meta.total).toBe(0);
    });

    it('when notes and string, number and boolean attributes are given, then they are stored as given', async () => {
      const team = await server().newTeam();
      const attributes = { plan: 'pro', country: 'DE', seats: 12, ratio: 0.25, beta: true, legacy: false, empty: '' };
      const created = await team.api.POST('/api/teams/{team}/participants', {
        params: { path: { team: team.id } },
        body: { key: 'user-1', notes: 'Internal tester', attributes },
      });
      expect(created.response.status).toBe(200);
      expect(created.data?.data).toMatchObject({ key: 'user-1', notes: 'Internal tester', attributes });

      const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-1' } } });
      expect(read.data?.data.notes).toBe('Internal tester');
      expect(read.data?.data.attributes).toEqual(attributes);
    });

    it.each([
      ['a nested object', { address: { city: 'Berlin' } }],
      ['a nested array', { tags: [['a'], 'b'] }],
      ['null', { plan: null }],
      ['51 properties', Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`a${i}`, i]))],
      ['a string of 1001 characters', { plan: 'x'.repeat(1001) }],
    ])('when an attribute value is %s, then 400 and nothing is created', async (_, attributes) => {
      const team = await server().newTeam();
      const { response, error } = await team.api.POST('/api/teams/{team}/participants', {
        params: { path: { team: team.id } },
        body: { key: 'user-1', attributes: attributes as never },
      });
      expect(response.status).toBe(400);
      expect(error?.errors?.some((e) => e.path.startsWith('/body/attributes'))).toBe(true);
      const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-1' } } });
      expect(read.response.status).toBe(404);
    });

    it('when there are exactly 50 attributes, then it is created', async () => {
      const team = await server().newTeam();
      const attributes = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`a${i}`, i]));
      const { response, data } = await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1', attributes } });
      expect(response.status).toBe(200);
      expect(data?.data.attributes).toEqual(attributes);
    });

    it('when the body has an unknown property, then 400', async () => {
      const team = await server().newTeam();
      const { response } = await team.api.POST('/api/teams/{team}/participants', {
        params: { path: { team: team.id } },
        body: { key: 'user-1', email: 'x@example.com' } as never,
      });
      expect(response.status).toBe(400);
    });

    it('when the key is taken, then 409 and the first participant stays', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'José', notes: 'first' } });
      const { response, error } = await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'José', notes: 'second' } });
      expect(response.status).toBe(409);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(error).toMatchObject({ status: 409, title: 'Conflict' });
      const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'José' } } });
      expect(read.data?.data.notes).toBe('first');
    });

    it('when keys differ only in case, then both are created', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      const a = await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'User-1' } });
      const b = await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'user-1' } });
      expect([a.response.status, b.response.status]).toEqual([200, 200]);
    });

    it('when the ingest key is used, then 403', async () => {
      const team = await server().newTeam();
      const { response } = await team.ingest.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1' } });
      expect(response.status).toBe(403);
    });
  });

  describe('GET /api/teams/{team}/participants', () => {
    it('when there are more participants than a page, then pages follow creation order with meta and links', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      const keys = ['zoe', 'adam', '用户-42', 'José', 'mia'];
      for (const key of keys) await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key } });

      const first = await team.api.GET('/api/teams/{team}/participants', { params: { path, query: { per_page: 2 } } });
      expect(first.data?.data.map((p) => p.key)).toEqual(['zoe', 'adam']);
      expect(first.data?.meta).toEqual({ current_page: 1, per_page: 2, total: 5, last_page: 3 });
      expect(first.data?.links.prev).toBeNull();
      expect(first.data?.links.next).toBe(`/api/teams/${team.id}/participants?per_page=2&page=2`);

      const second = await team.api.GET('/api/teams/{team}/participants', { params: { path, query: { per_page: 2, page: 2 } } });
      expect(second.data?.data.map((p) => p.key)).toEqual(['用户-42', 'José']);

      const last = await team.api.GET('/api/teams/{team}/participants', { params: { path, query: { per_page: 2, page: 3 } } });
      expect(last.data?.data.map((p) => p.key)).toEqual(['mia']);
      expect(last.data?.links.next).toBeNull();

      const past = await team.api.GET('/api/teams/{team}/participants', { params: { path, query: { per_page: 2, page: 4 } } });
      expect(past.response.status).toBe(200);
      expect(past.data?.data).toEqual([]);
    });

    it('when a team has more than 10 000 participants, then the deepest page answers, a deeper one is 400 naming page, and no link leads past it', async () => {
      // Arrange: 10 050 participants, written straight to storage (ingesting them would take minutes)
      const team = await server().newTeam();
      const path = { team: team.id };
      const at = new Date().toISOString();
      const keys = Array.from({ length: 10_050 }, (_, i) => `p${String(i).padStart(5, '0')}`);
      for (let start = 0; start < keys.length; start += 500) {
        const rows = keys.slice(start, start + 500).map((key) => ({ team_id: team.id, key, notes: null, attributes: '{}', created_at: at, updated_at: at }));
        await server().storage.db.insertInto('participants').values(rows).execute();
      }

      // Act
      const deepest = await team.api.GET('/api/teams/{team}/participants', { params: { path, query: { per_page: 100, page: 100 } } });
      const deeper = await team.api.GET('/api/teams/{team}/participants', { params: { path, query: { per_page: 100, page: 101 } } });
      const byDefault = await team.api.GET('/api/teams/{team}/participants', { params: { path } });

      // Assert
      expect(deepest.response.status).toBe(200);
      expect(deepest.data?.data.map((p) => p.key)).toEqual(keys.slice(9_900, 10_000));
      expect(deepest.data?.meta).toEqual({ current_page: 100, per_page: 100, total: 10_050, last_page: 101 });
      expect(deepest.data?.links).toMatchObject({ last: `/api/teams/${team.id}/participants?per_page=100&page=100`, next: null });
      expect(deeper.response.status).toBe(400);
      expect(deeper.error?.errors).toEqual([{ path: '/query/page', message: 'must be at most 100 with per_page=100' }]);
      expect(byDefault.data?.meta).toMatchObject({ total: 10_050, last_page: 670 });
      expect(byDefault.data?.links.last).toBe(`/api/teams/${team.id}/participants?page=666&per_page=15`);
    });

    it('when per_page is above 100, then 400', async () => {
      const team = await server().newTeam();
      const { response, error } = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id }, query: { per_page: 101 } } });
      expect(response.status).toBe(400);
      expect(error?.errors?.map((e) => e.path)).toContain('/query/per_page');
    });

    it("when another team's token asks, then 404", async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      const { response } = await other.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id } } });
      expect(response.status).toBe(404);
    });
  });

  describe('GET /api/teams/{team}/participants/{participant}', () => {
    it('when the participant has more enrolments than a page, then page/per_page page them and meta/links describe them', async () => {
      const team = await server().newTeam();
      for (const key of ['exp_c', 'exp_a', 'exp_b']) await createExperiment(team, key);
      await ingestOk(team, { participant: 'user-1', experiment: 'exp_b' });
      await ingestOk(team, { participant: 'user-1' });
      const path = { team: team.id, participant: 'user-1' };

      const first = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path, query: { per_page: 2 } } });
      expect(first.response.status).toBe(200);
      expect(first.data?.data.experiments.map((e) => e.experiment)).toEqual(['exp_b', 'exp_c']);
      expect(first.data?.meta).toEqual({ current_page: 1, per_page: 2, total: 3, last_page: 2 });
      expect(first.data?.links).toEqual({
        first: `/api/teams/${team.id}/participants/user-1?per_page=2&page=1`,
        last: `/api/teams/${team.id}/participants/user-1?per_page=2&page=2`,
        prev: null,
        next: `/api/teams/${team.id}/participants/user-1?per_page=2&page=2`,
      });

      const second = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path, query: { per_page: 2, page: 2 } } });
      expect(second.data?.data.experiments).toEqual([{ experiment: 'exp_a', status: 'running', variant: expect.stringMatching(/^(control|treatment)$/), enrolled_at: expect.any(String) }]);
      expect(second.data?.meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 });
      expect(second.data?.data.key).toBe('user-1');
    });

    it('when the participant was never ingested, then it has no experiments and the paging is empty', async () => {
      const team = await server().newTeam();
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: '用户-42' } });
      const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: '用户-42' } } });
      expect(data?.data.experiments).toEqual([]);
      expect(data?.meta).toEqual({ current_page: 1, per_page: 15, total: 0, last_page: 1 });
      expect(data?.links.next).toBeNull();
    });

    it('when the key is unknown or differs in case, then 404', async () => {
      const team = await server().newTeam();
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'José' } });
      for (const participant of ['nobody', 'josé', 'JOSÉ']) {
        const { response, error } = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant } } });
        expect(response.status).toBe(404);
        expect(error).toMatchObject({ status: 404, title: 'Not Found' });
      }
    });

    it('when the participant belongs to another team, then 404', async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1' } });
      const { response } = await other.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: other.id, participant: 'user-1' } } });
      expect(response.status).toBe(404);
    });
  });

  describe('PUT /api/teams/{team}/participants/{participant}', () => {
    it('when only notes are given, then only notes change', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'José', notes: 'old', attributes: { plan: 'pro' } } });
      const { data, response } = await team.api.PUT('/api/teams/{team}/participants/{participant}', {
        params: { path: { ...path, participant: 'José' } },
        body: { notes: 'new' },
      });
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'José', notes: 'new', attributes: { plan: 'pro' } });
    });

    it('when attributes are given, then they replace the stored object whole', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'user-1', notes: 'kept', attributes: { plan: 'pro', country: 'DE' } } });
      const { data } = await team.api.PUT('/api/teams/{team}/participants/{participant}', {
        params: { path: { ...path, participant: 'user-1' } },
        body: { attributes: { seats: 3 } },
      });
      expect(data?.data).toMatchObject({ notes: 'kept', attributes: { seats: 3 } });
      const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'user-1' } } });
      expect(read.data?.data.attributes).toEqual({ seats: 3 });
    });

    it('when notes is null, then the notes are cleared', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'user-1', notes: 'gone soon' } });
      const { data } = await team.api.PUT('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'user-1' } }, body: { notes: null } });
      expect(data?.data.notes).toBeNull();
    });

    it('when the key changes, then the participant answers at the new key only and keeps its enrolments', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const before = await ingestOk(team, { participant: 'user-1', event: 'goal' });
      const path = { team: team.id };

      const renamed = await team.api.PUT('/api/teams/{team}/participants/{participant}', {
        params: { path: { ...path, participant: 'user-1' } },
        body: { key: '用户-1' },
      });
      expect(renamed.response.status).toBe(200);
      expect(renamed.data?.data.key).toBe('用户-1');

      const old = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'user-1' } } });
      expect(old.response.status).toBe(404);
      const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: '用户-1' } } });
      expect(read.data?.data.experiments).toEqual(before.assignments);

      // Ingesting under the new key is the same participant: no second enrolment, same variant.
      const stats = await counts(team, 'exp');
      const again = await ingestOk(team, { participant: '用户-1' });
      expect(again.assignments).toEqual(before.assignments);
      expect(await counts(team, 'exp')).toEqual(stats);
    });

    it('when the new key is taken, then 409 and both participants stay', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'a', notes: 'A' } });
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'b', notes: 'B' } });
      const { response, error } = await team.api.PUT('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'a' } }, body: { key: 'b' } });
      expect(response.status).toBe(409);
      expect(error?.status).toBe(409);
      const list = await team.api.GET('/api/teams/{team}/participants', { params: { path } });
      expect(list.data?.data.map((p) => [p.key, p.notes])).toEqual([
        ['a', 'A'],
        ['b', 'B'],
      ]);
    });

    it('when the new key is invalid, then 400', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'a' } });
      const { response, error } = await team.api.PUT('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'a' } }, body: { key: 'a b' } });
      expect(response.status).toBe(400);
      expect(error?.errors?.map((e) => e.path)).toContain('/body/key');
    });

    it('when the participant is unknown, then 404', async () => {
      const team = await server().newTeam();
      const { response } = await team.api.PUT('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'nobody' } }, body: { notes: 'x' } });
      expect(response.status).toBe(404);
    });
  });

  describe('DELETE /api/teams/{team}/participants/{participant}', () => {
    it('when the participant is enrolled with conversions, then it answers with the participant and leaves the statistics', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const stayer = await ingestOk(team, { participant: 'stayer', experiment: 'exp', variant: 'treatment', event: 'goal' });
      const leaver = await ingestOk(team, { participant: 'José', experiment: 'exp', variant: 'treatment', event: 'goal' });
      await ingestOk(team, { participant: 'José', event: 'goal' });
      expect(stayer.assignments[0].variant).toBe('treatment');
      expect((await counts(team, 'exp')).treatment).toEqual({ participants: 2, conversions: 3, unique_conversions: 2 });

      const { data, response } = await team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'José' } } });
      expect(response.status).toBe(200);
      expect(data?.data).toEqual(leaver.participant);

      expect((await counts(team, 'exp')).treatment).toEqual({ participants: 1, conversions: 1, unique_conversions: 1 });
      const read = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'José' } } });
      expect(read.response.status).toBe(404);
      const teamRead = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
      expect(teamRead.data?.data.participants_count).toBe(1);
    });

    it('when the participant is in a stopped experiment, then it leaves that experiment\u2019s statistics too', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'user-1', experiment: 'exp', variant: 'control', event: 'goal' });
      await stopExperiment(team, 'exp');
      expect((await counts(team, 'exp')).control).toEqual({ participants: 1, conversions: 1, unique_conversions: 1 });

      const { response } = await team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-1' } } });
      expect(response.status).toBe(200);
      expect((await counts(team, 'exp')).control).toEqual({ participants: 0, conversions: 0, unique_conversions: 0 });
    });

    it('when the same key is ingested after the delete, then a new participant is created and enrolled afresh', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const path = { team: team.id, participant: '用户-42' };
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: '用户-42', notes: 'old', attributes: { plan: 'pro' } } });
      const old = await ingestOk(team, { participant: '用户-42', event: 'goal' });
      await team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path } });

      const fresh = await ingestOk(team, { participant: '用户-42' });
      expect(fresh.participant).toMatchObject({ key: '用户-42', notes: null, attributes: {} });
      // Hash assignment is deterministic: the same variant, but a new enrolment without the old conversions.
      expect(fresh.assignments.map((a) => a.variant)).toEqual(old.assignments.map((a) => a.variant));
      const stats = await counts(team, 'exp');
      expect(stats[fresh.assignments[0].variant]).toEqual({ participants: 1, conversions: 0, unique_conversions: 0 });
    });

    it('when an unenrolled participant is deleted and ingested again, then the new participant is not excluded', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const path = { team: team.id, participant: 'user-1' };
      await ingestOk(team, { participant: 'user-1' });
      await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path: { ...path, experiment: 'exp' } } });
      await team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path } });
      const fresh = await ingestOk(team, { participant: 'user-1' });
      expect(fresh.assignments.map((a) => a.experiment)).toEqual(['exp']);
    });

    it('when the participant is unknown, then 404', async () => {
      const team = await server().newTeam();
      const { response } = await team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'nobody' } } });
      expect(response.status).toBe(404);
    });
  });

  describe('concurrent removals and ingests', () => {
    it('when participants are deleted while others are ingested with events, then every request succeeds and the statistics add up', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_a');
      await createExperiment(team, 'exp_b');
      const old = Array.from({ length: 20 }, (_, i) => `old-${i}`);
      for (const key of old) {
        await ingestOk(team, { participant: key, experiment: 'exp_b', variant: 'control', event: 'goal' });
        await ingestOk(team, { participant: key, experiment: 'exp_a', variant: 'control', event: 'goal' });
      }

      // Each new participant's two ingests in order (the first places it in exp_b's control), every participant's at once with the deletions
      const ingest = (body: IngestRequest) => team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body }).then((r) => r.response.status);
      const statuses = (
        await Promise.all([
          ...old.map((key) => team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: key } } }).then((r) => [r.response.status])),
          ...old.map(async (_, i) => [await ingest({ participant: `new-${i}`, experiment: 'exp_b', variant: 'control', event: 'goal' }), await ingest({ participant: `new-${i}`, event: 'goal' })]),
        ])
      ).flat();

      expect(statuses).toEqual(statuses.map(() => 200));
      const a = await counts(team, 'exp_a');
      const b = await counts(team, 'exp_b');
      expect(b.control).toEqual({ participants: 20, conversions: 40, unique_conversions: 20 });
      expect(a.control.participants + a.treatment.participants).toBe(20);
      expect(a.control.unique_conversions + a.treatment.unique_conversions).toBe(20);
    });

    it('when a participant is withdrawn while it is being ingested with events, then it stays counted once with what came before the withdrawal, and nothing after', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const keys = Array.from({ length: 20 }, (_, i) => `user-${i}`);
      for (const key of keys) await ingestOk(team, { participant: key, event: 'goal' });

      const statuses = await Promise.all(
        keys.flatMap((key) => [
          team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: key, event: 'goal' } }).then((r) => r.response.status),
          team.api
            .DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path: { team: team.id, participant: key, experiment: 'exp' } } })
            .then((r) => r.response.status),
          team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: key, event: 'goal' } }).then((r) => r.response.status),
        ]),
      );

      expect(statuses).toEqual(statuses.map(() => 200));
      const during = await counts(team, 'exp');
      const total = (field: 'participants' | 'conversions' | 'unique_conversions') => during.control![field] + during.treatment![field];
      // Each was counted once and converted before it left; both concurrent ingests may come before the withdrawal (PostgreSQL: it takes its turn under the team's lock)
      expect([total('participants'), total('unique_conversions')]).toEqual([20, 20]);
      expect(total('conversions')).toBeGreaterThanOrEqual(20);
      expect(total('conversions')).toBeLessThanOrEqual(60);
      for (const key of keys) await ingestOk(team, { participant: key, event: 'goal' });
      expect(await counts(team, 'exp')).toEqual(during);
    });
  });

  describe('GET /api/teams/{team}/participants/{participant}/experiments', () => {
    it('when the participant is enrolled in several experiments, then they are listed in enrolment order with variants', async () => {
      const team = await server().newTeam();
      for (const key of ['exp_a', 'exp_b', 'exp_c']) await createExperiment(team, key);
      await createExperiment(team, 'exp_draft', { start: false });
      await ingestOk(team, { participant: 'José', experiment: 'exp_c', variant: 'treatment' });
      await ingestOk(team, { participant: 'José', experiment: 'exp_a', variant: 'control' });
      const last = await ingestOk(team, { participant: 'José' });

      const { data, response } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', {
        params: { path: { team: team.id, participant: 'José' } },
      });
      expect(response.status).toBe(200);
      expect(data?.data.map((e) => [e.experiment, e.status])).toEqual([
        ['exp_c', 'running'],
        ['exp_a', 'running'],
        ['exp_b', 'running'],
      ]);
      expect(data?.data[0].variant).toBe('treatment');
      expect(data?.data[1].variant).toBe('control');
      expect(data?.data).toEqual(last.assignments);
      expect(data?.meta).toEqual({ current_page: 1, per_page: 15, total: 3, last_page: 1 });

      const paged = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', {
        params: { path: { team: team.id, participant: 'José' }, query: { per_page: 1, page: 3 } },
      });
      expect(paged.data?.data.map((e) => e.experiment)).toEqual(['exp_b']);
      expect(paged.data?.links.prev).toBe(`/api/teams/${team.id}/participants/Jos%C3%A9/experiments?per_page=1&page=2`);
    });

    it('when an experiment is stopped, then the enrolment is still listed with status stopped', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'user-1' });
      await stopExperiment(team, 'exp');
      const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant: 'user-1' } } });
      expect(data?.data.map((e) => [e.experiment, e.status])).toEqual([['exp', 'stopped']]);
    });

    it('when the participant is unknown, then 404', async () => {
      const team = await server().newTeam();
      const { response } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant: 'nobody' } } });
      expect(response.status).toBe(404);
    });
  });

  describe('GET /api/teams/{team}/participants/{participant}/experiments/{experiment}', () => {
    it('when the participant is enrolled, then it answers the enrolment with its variant', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      const ingested = await ingestOk(team, { participant: '用户-42', experiment: 'exp', variant: 'treatment' });
      const { data, response } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: '用户-42', experiment: 'exp' } },
      });
      expect(response.status).toBe(200);
      expect(data?.data).toEqual({ experiment: 'exp', status: 'running', variant: 'treatment', enrolled_at: ingested.assignments[0].enrolled_at });
    });

    it('when the participant is not enrolled in the experiment, then 404', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp_running');
      await createExperiment(team, 'exp_draft', { start: false });
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1' } });
      for (const key of ['exp_running', 'exp_draft']) {
        const { response } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
          params: { path: { team: team.id, participant: 'user-1', experiment: key } },
        });
        expect(response.status).toBe(404);
      }
    });

    it('when the experiment is unknown, then 404', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'user-1' });
      const { response, error } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: 'user-1', experiment: 'nope' } },
      });
      expect(response.status).toBe(404);
      expect(error?.detail).toContain('nope');
    });
  });

  describe('DELETE /api/teams/{team}/participants/{participant}/experiments/{experiment}', () => {
    it('when the participant is enrolled, then it answers with the enrolment, which is gone, and the statistics keep what it did (intention to treat)', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'other', experiment: 'exp', variant: 'treatment', event: 'goal' });
      const ingested = await ingestOk(team, { participant: 'José', experiment: 'exp', variant: 'treatment', event: 'goal' });
      await ingestOk(team, { participant: 'José', event: 'goal' });
      expect((await counts(team, 'exp')).treatment).toEqual({ participants: 2, conversions: 3, unique_conversions: 2 });

      const path = { team: team.id, participant: 'José', experiment: 'exp' };
      const { data, response } = await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path } });
      expect(response.status).toBe(200);
      expect(data?.data).toEqual(ingested.assignments[0]);

      expect((await counts(team, 'exp')).treatment).toEqual({ participants: 2, conversions: 3, unique_conversions: 2 });
      const gone = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path } });
      expect(gone.response.status).toBe(404);
      const participant = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'José' } } });
      expect(participant.response.status).toBe(200);
      expect(participant.data?.data.experiments).toEqual([]);
    });

    it('when the unenrolled participant is ingested again, then it stays out of that experiment but joins another running one', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'user-1' });
      await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: 'user-1', experiment: 'exp' } },
      });
      await createExperiment(team, 'exp_new');
      const empty = await counts(team, 'exp');

      const plain = await ingestOk(team, { participant: 'user-1', event: 'goal' });
      expect(plain.assignments.map((a) => a.experiment)).toEqual(['exp_new']);
      const named = await ingestOk(team, { participant: 'user-1', experiment: 'exp', event: 'goal' });
      expect(named.assignments.map((a) => a.experiment)).toEqual(['exp_new']);
      const chosen = await ingestOk(team, { participant: 'user-1', experiment: 'exp', variant: 'treatment' });
      expect(chosen.assignments.map((a) => a.experiment)).toEqual(['exp_new']);

      expect(await counts(team, 'exp')).toEqual(empty);
      const list = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant: 'user-1' } } });
      expect(list.data?.data.map((e) => e.experiment)).toEqual(['exp_new']);
    });

    it('when the experiment is stopped, then a withdrawal works and the statistics keep the participant', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: '用户-42', experiment: 'exp', variant: 'control', event: 'goal' });
      await stopExperiment(team, 'exp');
      const { data, response } = await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: '用户-42', experiment: 'exp' } },
      });
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ experiment: 'exp', status: 'stopped', variant: 'control' });
      expect((await counts(team, 'exp')).control).toEqual({ participants: 1, conversions: 1, unique_conversions: 1 });
    });

    it('when the participant is not enrolled, then 404 and nothing changes', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1' } });
      const { response } = await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: 'user-1', experiment: 'exp' } },
      });
      expect(response.status).toBe(404);
      // Not excluded: a later ingest still enrols it.
      const later = await ingestOk(team, { participant: 'user-1' });
      expect(later.assignments.map((a) => a.experiment)).toEqual(['exp']);
    });

    it('when the experiment or the participant is unknown, then 404', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'exp');
      await ingestOk(team, { participant: 'user-1' });
      const unknownExperiment = await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: 'user-1', experiment: 'nope' } },
      });
      expect(unknownExperiment.response.status).toBe(404);
      const unknownParticipant = await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', {
        params: { path: { team: team.id, participant: 'nobody', experiment: 'exp' } },
      });
      expect(unknownParticipant.response.status).toBe(404);
    });
  });
});
