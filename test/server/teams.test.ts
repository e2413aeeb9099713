import { describe, expect, it } from 'vitest';
import { createApiClient, type components } from 'experimentation-api';
import { createTeam, setQuota } from '../../server/admin/service';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type Team = components['schemas']['Team'];

/** `include` as the contract serialises it: one comma-separated value (form, explode false). */
const commaSeparated = { querySerializer: { array: { style: 'form', explode: false } } } as const;

const EMBEDDED = ['events', 'experiments', 'participants', 'features'] as const;

describe.each(engines)('users and teams on %s', (engine) => {
  const server = useServer(engine);

  /** A GET with a raw query string, for what the typed client cannot send. */
  async function rawGet(path: string, credential?: string) {
    const response = await fetch(`${server().baseUrl}${path}`, { headers: credential ? { authorization: `Bearer ${credential}` } : {} });
    return { response, body: (await response.json()) as unknown };
  }

  /** A second team for the same user; the user's current team becomes the new one. */
  async function secondTeamOf(team: TestTeam, name: string) {
    const created = await createTeam(server().storage.db, { name, email: team.email });
    return created.team;
  }

  async function userIdOf(team: TestTeam): Promise<number> {
    const row = await server().storage.db.selectFrom('users').select('id').where('email', '=', team.email).executeTakeFirstOrThrow();
    return row.id;
  }

  /** Events a_event and b_event, draft experiment `exp` (goal a_event) with variants control (auto) and treat (30), participants zz then aa, feature flag. */
  async function populate(team: TestTeam) {
    const path = { team: team.id };
    for (const key of ['b_event', 'a_event']) await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key } });
    await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'a_event' } });
    const variants = { path: { ...path, experiment: 'exp' } };
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: variants, body: { key: 'control', control: true } });
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: variants, body: { key: 'treat', traffic: 30 } });
    await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key: 'zz' } });
    await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'aa' } });
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'flag', enabled: true, value: 'on' } });
  }

  describe('GET /api/user', () => {
    it('when an API token is sent, then 200 with its user', async () => {
      // Arrange
      const team = await server().newTeam();
      // Act
      const { data, response } = await team.api.GET('/api/user');
      // Assert
      expect(response.status).toBe(200);
      expect(data?.data).toEqual({ id: await userIdOf(team), name: team.email.split('@')[0], email: team.email, current_team_id: team.id });
    });

    it('when no credential is sent, then 401', async () => {
      const { error, response } = await createApiClient(server().baseUrl).GET('/api/user');
      expectProblem(response, error, 401, 'Unauthorized');
    });

    it('when an unknown token is sent, then 401', async () => {
      const { error, response } = await createApiClient(server().baseUrl, 'est_notatokenanyoneissued').GET('/api/user');
      expectProblem(response, error, 401, 'Unauthorized');
    });

    it('when an ingest key is sent, then 403', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.ingest.GET('/api/user');
      expectProblem(response, error, 403, 'Forbidden');
    });

    it('when an unknown query parameter is sent, then 400 names it', async () => {
      const team = await server().newTeam();
      const { response, body } = await rawGet('/api/user?expand=teams', team.token);
      expectProblem(response, body, 400, 'Bad Request', ['/query/expand']);
    });
  });

  describe('GET /api/current-team', () => {
    it('when the admin service created a team for the user, then 200 with that team', async () => {
      const team = await server().newTeam('Current Co');
      const { data, response } = await team.api.GET('/api/current-team');
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ id: team.id, name: 'Current Co', events_count: 0, experiments_count: 0, participants_count: 0, ingest_limit: null });
      for (const key of EMBEDDED) expect(data?.data).not.toHaveProperty(key);
    });

    it('when the admin service created a second team, then the second is current', async () => {
      const team = await server().newTeam();
      const second = await secondTeamOf(team, 'Second');
      const { data } = await team.api.GET('/api/current-team');
      expect(data?.data.id).toBe(second.id);
    });

    it('when the user has no current team, then 404', async () => {
      // Arrange
      const team = await server().newTeam();
      await server().storage.db.updateTable('users').set({ current_team_id: null }).where('email', '=', team.email).execute();
      // Act
      const { error, response } = await team.api.GET('/api/current-team');
      // Assert
      expectProblem(response, error, 404, 'Not Found');
      const user = await team.api.GET('/api/user');
      expect(user.data?.data.current_team_id).toBeNull();
    });

    it('when an ingest key is sent, then 403', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.ingest.GET('/api/current-team');
      expectProblem(response, error, 403, 'Forbidden');
    });

    it('when no credential is sent, then 401', async () => {
      const { error, response } = await createApiClient(server().baseUrl).GET('/api/current-team');
      expectProblem(response, error, 401, 'Unauthorized');
    });

    it('when an unknown query parameter is sent, then 400 names it', async () => {
      const team = await server().newTeam();
      const { response, body } = await rawGet('/api/current-team?include=events', team.token);
      expectProblem(response, body, 400, 'Bad Request', ['/query/include']);
    });
  });

  describe('GET /api/teams', () => {
    it("when the user has two teams, then both and no other user's team are listed", async () => {
      // Arrange
      const team = await server().newTeam('First');
      const second = await secondTeamOf(team, 'Second');
      const stranger = await server().newTeam('Stranger');
      // Act
      const { data, response } = await team.api.GET('/api/teams');
      // Assert
      expect(response.status).toBe(200);
      expect(data?.data.map((t) => t.id)).toEqual([team.id, second.id]);
      expect(data?.data.map((t) => t.id)).not.toContain(stranger.id);
      expect(data?.meta).toEqual({ current_page: 1, per_page: 15, total: 2, last_page: 1 });
      expect(data?.links).toEqual({ first: '/api/teams?page=1&per_page=15', last: '/api/teams?page=1&per_page=15', prev: null, next: null });
      for (const listed of data!.data) for (const key of EMBEDDED) expect(listed).not.toHaveProperty(key);
    });

    it.each([
      ['id', ['t1', 't2', 't3']],
      ['-id', ['t3', 't2', 't1']],
      ['name', ['t3', 't1', 't2']],
      ['-name', ['t2', 't1', 't3']],
      ['created_at', ['t2', 't3', 't1']],
      ['-created_at', ['t1', 't3', 't2']],
    ] as const)('when sort=%s, then the teams come in that order', async (sort, expected) => {
      // Arrange: three teams whose id, name and created_at orders all differ
      const t1 = await server().newTeam('Bravo');
      const t2 = await secondTeamOf(t1, 'Charlie');
      const t3 = await secondTeamOf(t1, 'Alpha');
      const db = server().storage.db;
      const created = { [t1.id]: '2030-01-01T00:00:00.000Z', [t2.id]: '2020-01-01T00:00:00.000Z', [t3.id]: '2025-01-01T00:00:00.000Z' };
      for (const [id, at] of Object.entries(created)) await db.updateTable('teams').set({ created_at: at }).where('id', '=', Number(id)).execute();
      const ids = { t1: t1.id, t2: t2.id, t3: t3.id };
      // Act
      const { data, response } = await t1.api.GET('/api/teams', { params: { query: { sort } } });
      // Assert
      expect(response.status).toBe(200);
      expect(data?.data.map((t) => t.id)).toEqual(expected.map((name) => ids[name]));
      expect(data?.data.find((t) => t.id === t2.id)?.created_at).toBe('2020-01-01T00:00:00.000Z');
    });

    it('when there are more teams than a page, then meta and links describe the page and keep the query', async () => {
      // Arrange
      const team = await server().newTeam('A');
      const second = await secondTeamOf(team, 'B');
      const third = await secondTeamOf(team, 'C');
      // Act
      const first = await team.api.GET('/api/teams', { params: { query: { per_page: 2, sort: '-id' } } });
      const page2 = await team.api.GET('/api/teams', { params: { query: { per_page: 2, page: 2, sort: '-id' } } });
      // Assert
      expect(first.data?.data.map((t) => t.id)).toEqual([third.id, second.id]);
      expect(first.data?.meta).toEqual({ current_page: 1, per_page: 2, total: 3, last_page: 2 });
      expect(first.data?.links.prev).toBeNull();
      expect(page2.data?.data.map((t) => t.id)).toEqual([team.id]);
      expect(page2.data?.meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 });
      expect(page2.data?.links.next).toBeNull();
      const query = (link: string | null | undefined) => Object.fromEntries(new URL(link ?? '', 'http://x').searchParams);
      expect(new URL(first.data!.links.next!, 'http://x').pathname).toBe('/api/teams');
      expect(query(first.data?.links.next)).toEqual({ per_page: '2', page: '2', sort: '-id' });
      expect(query(first.data?.links.first)).toEqual({ per_page: '2', page: '1', sort: '-id' });
      expect(query(first.data?.links.last)).toEqual({ per_page: '2', page: '2', sort: '-id' });
      expect(query(page2.data?.links.prev)).toEqual({ per_page: '2', page: '1', sort: '-id' });
      // The pages follow their own links to the same teams.
      const followed = await rawGet(first.data!.links.next!, team.token);
      expect((followed.body as { data: Team[] }).data.map((t) => t.id)).toEqual([team.id]);
    });

    it('when include and sort are given, then the page links keep them and can be followed', async () => {
      // Arrange
      const team = await server().newTeam('Zed');
      const second = await secondTeamOf(team, 'Ann');
      await populate(team);
      // Act
      const { data } = await team.api.GET('/api/teams', {
        params: { query: { include: ['events', 'experiments.variants'], sort: 'name', per_page: 1 } },
        ...commaSeparated,
      });
      const next = await rawGet(data!.links.next!, team.token);
      // Assert
      expect(data?.data.map((t) => t.id)).toEqual([second.id]);
      const nextQuery = new URL(data!.links.next!, 'http://x').searchParams;
      expect(nextQuery.get('include')).toBe('events,experiments.variants');
      expect(nextQuery.get('sort')).toBe('name');
      expect(next.response.status).toBe(200);
      const [followed] = (next.body as { data: Team[] }).data;
      expect(followed.id).toBe(team.id);
      expect(followed.events?.map((e) => e.key)).toEqual(['a_event', 'b_event']);
      expect(followed.experiments?.[0].variants).toHaveLength(2);
    });

    it('when the page is past the last, then 200 with no data', async () => {
      const team = await server().newTeam();
      const { data, response } = await team.api.GET('/api/teams', { params: { query: { page: 3 } } });
      expect(response.status).toBe(200);
      expect(data?.data).toEqual([]);
      expect(data?.meta).toEqual({ current_page: 3, per_page: 15, total: 1, last_page: 1 });
      expect(data?.links.next).toBeNull();
    });

    it('when include asks for everything, then each team embeds it, variants with resolved traffic', async () => {
      // Arrange
      const team = await server().newTeam();
      const second = await secondTeamOf(team, 'Empty');
      await populate(team);
      // Act
      const { data, response } = await team.api.GET('/api/teams', {
        params: { query: { include: ['events', 'experiments.variants', 'participants', 'features'] } },
        ...commaSeparated,
      });
      // Assert
      expect(response.status).toBe(200);
      const full = data!.data.find((t) => t.id === team.id)!;
      expect(full).toMatchObject({ events_count: 2, experiments_count: 1, participants_count: 2 });
      expect(full.events?.map((e) => e.key)).toEqual(['a_event', 'b_event']);
      expect(full.experiments).toHaveLength(1);
      expect(full.experiments?.[0]).toMatchObject({ key: 'exp', status: 'draft', event: 'a_event' });
      expect(full.experiments?.[0].variants?.map((v) => [v.key, v.control, v.traffic, v.traffic_auto])).toEqual([
        ['control', true, 70, true],
        ['treat', false, 30, false],
      ]);
      expect(full.participants?.map((p) => p.key)).toEqual(['zz', 'aa']); // by creation
      expect(full.features).toEqual([expect.objectContaining({ key: 'flag', enabled: true, value: 'on', description: null })]);
      const empty = data!.data.find((t) => t.id === second.id)!;
      expect(empty).toMatchObject({ events: [], experiments: [], participants: [], features: [] });
    });

    it('when include asks for experiments only, then experiments come without variants and nothing else is embedded', async () => {
      const team = await server().newTeam();
      await populate(team);
      const { data } = await team.api.GET('/api/teams', { params: { query: { include: ['experiments'] } }, ...commaSeparated });
      const listed = data!.data[0];
      expect(listed.experiments?.map((e) => e.key)).toEqual(['exp']);
      expect(listed.experiments?.[0]).not.toHaveProperty('variants');
      for (const key of ['events', 'participants', 'features']) expect(listed).not.toHaveProperty(key);
    });

    it('when the team has more than 100 of a kind, then 100 are embedded and the count gives the total', async () => {
      // Arrange: 101 events and 101 features, written directly for speed
      const team = await server().newTeam();
      const at = new Date().toISOString();
      const keys = Array.from({ length: 101 }, (_, i) => `k${String(i).padStart(3, '0')}`).reverse();
      const db = server().storage.db;
      await db.insertInto('events').values(keys.map((key) => ({ team_id: team.id, key, description: null, type: 'unique' as const, created_at: at, updated_at: at }))).execute();
      await db.insertInto('features').values(keys.map((key) => ({ team_id: team.id, key, description: null, enabled: false, value: null, created_at: at, updated_at: at }))).execute();
      // Act
      const { data, response } = await team.api.GET('/api/teams/{team}', {
        params: { path: { team: team.id }, query: { include: ['events', 'features'] } },
        ...commaSeparated,
      });
      // Assert
      expect(response.status).toBe(200);
      expect(data?.data.events_count).toBe(101);
      const first100 = [...keys].sort().slice(0, 100);
      expect(data?.data.events?.map((e) => e.key)).toEqual(first100);
      expect(data?.data.features?.map((f) => f.key)).toEqual(first100);
    });

    it('when include is absent, then no related resources are embedded but the counts are right', async () => {
      const team = await server().newTeam();
      await populate(team);
      const { data } = await team.api.GET('/api/teams');
      const listed = data!.data[0];
      expect(listed).toMatchObject({ id: team.id, events_count: 2, experiments_count: 1, participants_count: 2 });
      for (const key of EMBEDDED) expect(listed).not.toHaveProperty(key);
    });

    it('when events, experiments and participants are created and deleted, then the *_count fields follow', async () => {
      // Arrange
      const team = await server().newTeam();
      const path = { team: team.id };
      const counts = async () => {
        const { data } = await team.api.GET('/api/teams');
        const { events_count, experiments_count, participants_count } = data!.data[0];
        return [events_count, experiments_count, participants_count];
      };
      expect(await counts()).toEqual([0, 0, 0]);
      // Act and assert
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'e1' } });
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'e2' } });
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'e3' } });
      expect(await counts()).toEqual([3, 0, 0]);
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'x1', event: 'e1' } });
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'x2', event: 'e1' } });
      expect(await counts()).toEqual([3, 2, 0]);
      for (const key of ['u1', 'u2', 'u3', 'u4']) await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: key } });
      await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'u1' } });
      expect(await counts()).toEqual([3, 2, 4]);
      await team.api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'e3' } } });
      await team.api.DELETE('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'x2' } } });
      expect(await counts()).toEqual([2, 1, 4]);
      const one = await team.api.GET('/api/teams/{team}', { params: { path } });
      expect(one.data?.data).toMatchObject({ events_count: 2, experiments_count: 1, participants_count: 4 });
    });

    it.each([
      ['an unknown include', 'include=events,variants', '/query/include/1'],
      ['a repeated include', 'include=events,events', '/query/include'],
      ['per_page above 100', 'per_page=101', '/query/per_page'],
      ['per_page 0', 'per_page=0', '/query/per_page'],
      ['page 0', 'page=0', '/query/page'],
      ['a page beyond any integer', 'page=999999999999999999999', '/query/page'],
      ['a non-integer page', 'page=two', '/query/page'],
      ['a hexadecimal page', 'page=0x10', '/query/page'],
      ['a page with an exponent', 'page=1e2', '/query/page'],
      ['a signed page', 'page=%2B1', '/query/page'],
      ['a per_page with a leading space', 'per_page=%20100', '/query/per_page'],
      ['a per_page with a fraction', 'per_page=10.0', '/query/per_page'],
      ['a page past the 10 000th item', 'page=101&per_page=100', '/query/page'],
      ['an unknown sort', 'sort=email', '/query/sort'],
      ['an unknown parameter', 'filter=mine', '/query/filter'],
    ])('when the query has %s, then 400 names it', async (_what, query, field) => {
      const team = await server().newTeam();
      const { response, body } = await rawGet(`/api/teams?${query}`, team.token);
      expectProblem(response, body, 400, 'Bad Request', [field]);
    });

    it('when an ingest key is sent, then 403', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.ingest.GET('/api/teams');
      expectProblem(response, error, 403, 'Forbidden');
    });

    it('when no credential is sent, then 401', async () => {
      const { error, response } = await createApiClient(server().baseUrl).GET('/api/teams');
      expectProblem(response, error, 401, 'Unauthorized');
    });
  });

  describe('GET /api/teams/{team}', () => {
    it('when the user is a member, then 200 with the team and what include asks for', async () => {
      const team = await server().newTeam('Solo');
      await populate(team);
      const { data, response } = await team.api.GET('/api/teams/{team}', {
        params: { path: { team: team.id }, query: { include: ['features', 'experiments.variants'] } },
        ...commaSeparated,
      });
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ id: team.id, name: 'Solo', events_count: 2, experiments_count: 1, participants_count: 2, ingest_limit: null });
      expect(data?.data.features?.map((f) => f.key)).toEqual(['flag']);
      expect(data?.data.experiments?.[0].variants?.map((v) => v.traffic)).toEqual([70, 30]);
      expect(data?.data).not.toHaveProperty('events');
      expect(data?.data).not.toHaveProperty('participants');
    });

    it('when the user reaches the team through a second membership, then 200', async () => {
      const team = await server().newTeam();
      const second = await secondTeamOf(team, 'Other one');
      const { data, response } = await team.api.GET('/api/teams/{team}', { params: { path: { team: second.id } } });
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ id: second.id, name: 'Other one' });
      for (const key of EMBEDDED) expect(data?.data).not.toHaveProperty(key);
    });

    it('when an operator set an ingest limit, then the team shows it', async () => {
      const team = await server().newTeam();
      await setQuota(server().storage.db, team.id, 1000);
      const { data } = await team.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
      expect(data?.data.ingest_limit).toBe(1000);
    });

    it("when another team's token asks, then 404", async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      const { error, response } = await other.api.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
      expectProblem(response, error, 404, 'Not Found');
    });

    it('when the team does not exist, then 404', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.api.GET('/api/teams/{team}', { params: { path: { team: 987654321 } } });
      expectProblem(response, error, 404, 'Not Found');
    });

    it.each([['abc'], ['1.5'], ['0'], ['-1']])('when the id is %s, then 400 names the path parameter', async (id) => {
      const team = await server().newTeam();
      const { response, body } = await rawGet(`/api/teams/${id}`, team.token);
      expectProblem(response, body, 400, 'Bad Request', ['/path/team']);
    });

    it('when include has an unknown value, then 400', async () => {
      const team = await server().newTeam();
      const { response, body } = await rawGet(`/api/teams/${team.id}?include=members`, team.token);
      expectProblem(response, body, 400, 'Bad Request', ['/query/include/0']);
    });

    it("when the team's own ingest key is sent, then 403", async () => {
      const team = await server().newTeam();
      const { error, response } = await team.ingest.GET('/api/teams/{team}', { params: { path: { team: team.id } } });
      expectProblem(response, error, 403, 'Forbidden');
    });

    it('when no credential is sent, then 401', async () => {
      const team = await server().newTeam();
      const { error, response } = await createApiClient(server().baseUrl).GET('/api/teams/{team}', { params: { path: { team: team.id } } });
      expectProblem(response, error, 401, 'Unauthorized');
    });
  });
});
