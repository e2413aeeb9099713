import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';

describe.each(engines)('events (create, change, delete, list) on %s', (engine) => {
  const server = useServer(engine);

  describe('POST /api/teams/{team}/events', () => {
    it('when the key is new, then the event is created with defaults', async () => {
      const team = await server().newTeam();
      const { data, response } = await team.api.POST('/api/teams/{team}/events', {
        params: { path: { team: team.id } },
        body: { key: 'purchase' },
      });
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'purchase', description: null, type: 'unique' });
      expect(Date.parse(data!.data.created_at)).not.toBeNaN();
    });

    it('when the key is taken, then 409 and the first event stays', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'signup', type: 'count' } });
      const { error, response } = await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'signup' } });
      expect(response.status).toBe(409);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(error).toMatchObject({ status: 409, title: 'Conflict' });
      const { data } = await team.api.GET('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'signup' } } });
      expect(data?.data.type).toBe('count');
    });

    it('when the key breaks the pattern, then 400 names the field', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.api.POST('/api/teams/{team}/events', {
        params: { path: { team: team.id } },
        body: { key: 'has space' },
      });
      expect(response.status).toBe(400);
      expect(error?.errors?.map((e) => e.path)).toContain('/body/key');
    });
  });

  describe('PUT and DELETE /api/teams/{team}/events/{event}', () => {
    it('when the key changes, then the event answers at the new key only', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'old_key', description: 'kept' } });
      const { data } = await team.api.PUT('/api/teams/{team}/events/{event}', {
        params: { path: { ...path, event: 'old_key' } },
        body: { key: 'new_key' },
      });
      expect(data?.data).toMatchObject({ key: 'new_key', description: 'kept' });
      const old = await team.api.GET('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'old_key' } } });
      expect(old.response.status).toBe(404);
    });

    it('when the event is an experiment goal, then delete is 409 and the event stays', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } });
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'goal' } });
      const { response, error } = await team.api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'goal' } } });
      expect(response.status).toBe(409);
      expect(error?.detail).toContain("'exp'");
      const still = await team.api.GET('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'goal' } } });
      expect(still.response.status).toBe(200);
    });

    it('when the event is unused, then delete answers with it and it is gone', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'gone' } });
      const { data } = await team.api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'gone' } } });
      expect(data?.data.key).toBe('gone');
      const list = await team.api.GET('/api/teams/{team}/events', { params: { path } });
      expect(list.data?.data).toEqual([]);
    });
  });

  describe('GET /api/teams/{team}/events', () => {
    it('when there are more events than a page, then pages are ordered by key with links', async () => {
      const team = await server().newTeam();
      const path = { team: team.id };
      for (const key of ['c', 'a', 'b']) await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key } });
      const { data } = await team.api.GET('/api/teams/{team}/events', { params: { path, query: { per_page: 2, page: 2 } } });
      expect(data?.data.map((e) => e.key)).toEqual(['c']);
      expect(data?.meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 });
      expect(data?.links.prev).toBe(`/api/teams/${team.id}/events?per_page=2&page=1`);
      expect(data?.links.next).toBeNull();
    });

    it("when another team's token asks, then 404", async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      const { response } = await other.api.GET('/api/teams/{team}/events', { params: { path: { team: team.id } } });
      expect(response.status).toBe(404);
    });
  });
});
