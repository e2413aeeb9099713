import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiClient, type components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { sleep, startChild, stopAllChildren } from '../support/process';
import { clientsOf, createTeamAt } from '../support/team';
import { freshStorage, type StorageEnv } from '../support/storage';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type Feature = components['schemas']['Feature'];

describe.each(engines)('features on %s', (engine) => {
  const server = useServer(engine);

  /** A request with a raw body and media type, for what the typed client cannot send. */
  async function send(team: TestTeam, method: string, path: string, body: string | undefined, contentType?: string) {
    const headers: Record<string, string> = { authorization: `Bearer ${team.token}` };
    if (contentType) headers['content-type'] = contentType;
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}${path}`, { method, headers, body });
    return { response, body: (await response.json()) as unknown };
  }

  async function create(team: TestTeam, body: components['schemas']['FeatureCreate']): Promise<Feature> {
    const { data, response } = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body });
    expect(response.status).toBe(200);
    return data!.data;
  }

  async function read(team: TestTeam, feature: string) {
    return team.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature } } });
  }

  async function keys(team: TestTeam): Promise<string[]> {
    const { data } = await team.api.GET('/api/teams/{team}/features', { params: { path: { team: team.id }, query: { per_page: 100 } } });
    return data!.data.map((f) => f.key);
  }

  describe('POST /api/teams/{team}/features', () => {
    it('when only the key is given, then the flag is created disabled with a null value and description', async () => {
      // Arrange
      const team = await server().newTeam();
      // Act
      const { data, response } = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'new_checkout' } });
      // Assert
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'new_checkout', description: null, enabled: false, value: null });
      expect(data?.data.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(data?.data.updated_at).toBe(data?.data.created_at);
      const stored = await read(team, 'new_checkout');
      expect(stored.data?.data).toEqual(data?.data);
    });

    it('when every field is given, then all are stored', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'banner', description: 'Top banner', enabled: true, value: '#00aa00' });
      expect(created).toMatchObject({ key: 'banner', description: 'Top banner', enabled: true, value: '#00aa00' });
      expect((await read(team, 'banner')).data?.data).toEqual(created);
    });

    it('when value is explicitly null, then it is stored as null', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'nothing', enabled: true, value: null });
      expect(created.value).toBeNull();
      expect((await read(team, 'nothing')).data?.data.value).toBeNull();
    });

    it('when value is the empty string, then it stays an empty string, not null', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'blank', value: '' });
      expect(created.value).toBe('');
      expect((await read(team, 'blank')).data?.data.value).toBe('');
    });

    it('when value is JSON text with unicode, then it comes back byte for byte', async () => {
      const team = await server().newTeam();
      const value = JSON.stringify({ copy: 'Grüße — 你好', emoji: '🚀', n: [1, 2] });
      await create(team, { key: 'copy', value });
      expect((await read(team, 'copy')).data?.data.value).toBe(value);
    });

    it('when the key is taken, then 409 and the first flag stays', async () => {
      // Arrange
      const team = await server().newTeam();
      const first = await create(team, { key: 'dup', enabled: true, value: 'first' });
      // Act
      const { error, response } = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'dup', value: 'second' } });
      // Assert
      expectProblem(response, error, 409, 'Conflict');
      expect((await read(team, 'dup')).data?.data).toEqual(first);
      expect(await keys(team)).toEqual(['dup']);
    });

    it('when the same key exists in another team, then it is created', async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      await create(other, { key: 'shared', enabled: true });
      const created = await create(team, { key: 'shared' });
      expect(created.enabled).toBe(false);
    });

    it('when keys differ only in case, then both exist', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'Flag', value: 'upper' });
      await create(team, { key: 'flag', value: 'lower' });
      expect((await read(team, 'Flag')).data?.data.value).toBe('upper');
      expect((await read(team, 'flag')).data?.data.value).toBe('lower');
    });

    it.each([
      ['an unknown property', { key: 'x', colour: 'red' }, '/body/colour'],
      ['no key', { enabled: true }, '/body/key'],
      ['a key breaking the pattern', { key: 'has-dash' }, '/body/key'],
      ['a key with a double underscore', { key: 'a__b' }, '/body/key'],
      ['a key over 255 characters', { key: 'k'.repeat(256) }, '/body/key'],
      ['a non-boolean enabled', { key: 'x', enabled: 'yes' }, '/body/enabled'],
      ['a non-string value', { key: 'x', value: 42 }, '/body/value'],
      ['a value over 10000 characters', { key: 'x', value: 'v'.repeat(10001) }, '/body/value'],
      ['a value with NUL', { key: 'x', value: 'a\u0000b' }, '/body/value'],
      ['a description over 2000 characters', { key: 'x', description: 'd'.repeat(2001) }, '/body/description'],
    ])('when the body has %s, then 400 names the field and nothing is created', async (_what, body, field) => {
      const team = await server().newTeam();
      const { response, body: problem } = await send(team, 'POST', '/features', JSON.stringify(body), 'application/json');
      expectProblem(response, problem, 400, 'Bad Request', [field]);
      expect(await keys(team)).toEqual([]);
    });

    it('when the body is not valid JSON, then 400 names the body and nothing is created', async () => {
      const team = await server().newTeam();
      const { response, body } = await send(team, 'POST', '/features', '{"key": "half"', 'application/json');
      expectProblem(response, body, 400, 'Bad Request', ['/body']);
      expect(await keys(team)).toEqual([]);
    });

    it('when the body is not an object, then 400', async () => {
      const team = await server().newTeam();
      const { response, body } = await send(team, 'POST', '/features', '["key"]', 'application/json');
      expectProblem(response, body, 400, 'Bad Request', ['/body']);
      expect(await keys(team)).toEqual([]);
    });

    it('when the body is sent as application/vnd.api+json, then it is accepted like JSON', async () => {
      const team = await server().newTeam();
      const { response, body } = await send(team, 'POST', '/features', JSON.stringify({ key: 'sdk_flag', enabled: true }), 'application/vnd.api+json');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect((body as { data: Feature }).data).toMatchObject({ key: 'sdk_flag', enabled: true, value: null });
      expect((await read(team, 'sdk_flag')).data?.data.enabled).toBe(true);
    });

    it('when application/json carries a charset, then it is accepted', async () => {
      const team = await server().newTeam();
      const { response } = await send(team, 'POST', '/features', JSON.stringify({ key: 'charset' }), 'application/json; charset=utf-8');
      expect(response.status).toBe(200);
      expect(await keys(team)).toEqual(['charset']);
    });

    it('when the body is sent as text/plain, then 415 and nothing is created', async () => {
      const team = await server().newTeam();
      const { response, body } = await send(team, 'POST', '/features', JSON.stringify({ key: 'plain' }), 'text/plain');
      expectProblem(response, body, 415, 'Unsupported Media Type');
      expect(await keys(team)).toEqual([]);
    });

    it('when the body is over 64 KiB, then 413 and nothing is created', async () => {
      const team = await server().newTeam();
      const big = JSON.stringify({ key: 'big', description: 'x'.repeat(64 * 1024) });
      const { response, body } = await send(team, 'POST', '/features', big, 'application/json');
      expectProblem(response, body, 413, 'Content Too Large');
      expect(await keys(team)).toEqual([]);
    });

    it('when the body is just under 64 KiB but invalid, then it is judged by its schema (400), not its size', async () => {
      const team = await server().newTeam();
      const body = JSON.stringify({ key: 'near', description: 'x'.repeat(60 * 1024) });
      const { response, body: problem } = await send(team, 'POST', '/features', body, 'application/json');
      expectProblem(response, problem, 400, 'Bad Request', ['/body/description']);
    });
  });

  describe('GET /api/teams/{team}/features', () => {
    it('when there are flags, then they are listed by key, one page at a time', async () => {
      // Arrange
      const team = await server().newTeam();
      for (const key of ['delta', 'Bravo', 'alpha', 'charlie', 'a_b']) await create(team, { key });
      const path = { team: team.id };
      // Act
      const all = await team.api.GET('/api/teams/{team}/features', { params: { path } });
      const page2 = await team.api.GET('/api/teams/{team}/features', { params: { path, query: { per_page: 2, page: 2 } } });
      const page3 = await team.api.GET('/api/teams/{team}/features', { params: { path, query: { per_page: 2, page: 3 } } });
      // Assert: code-point order, the order of case-sensitive keys
      expect(all.data?.data.map((f) => f.key)).toEqual(['Bravo', 'a_b', 'alpha', 'charlie', 'delta']);
      expect(all.data?.meta).toEqual({ current_page: 1, per_page: 15, total: 5, last_page: 1 });
      expect(all.data?.links).toEqual({
        first: `/api/teams/${team.id}/features?page=1&per_page=15`,
        last: `/api/teams/${team.id}/features?page=1&per_page=15`,
        prev: null,
        next: null,
      });
      expect(page2.data?.data.map((f) => f.key)).toEqual(['alpha', 'charlie']);
      expect(page2.data?.meta).toEqual({ current_page: 2, per_page: 2, total: 5, last_page: 3 });
      expect(page2.data?.links).toEqual({
        first: `/api/teams/${team.id}/features?per_page=2&page=1`,
        last: `/api/teams/${team.id}/features?per_page=2&page=3`,
        prev: `/api/teams/${team.id}/features?per_page=2&page=1`,
        next: `/api/teams/${team.id}/features?per_page=2&page=3`,
      });
      expect(page3.data?.data.map((f) => f.key)).toEqual(['delta']);
      expect(page3.data?.links.next).toBeNull();
    });

    it('when the page is past the last, then 200 with no data', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'only' });
      const { data, response } = await team.api.GET('/api/teams/{team}/features', { params: { path: { team: team.id }, query: { page: 4 } } });
      expect(response.status).toBe(200);
      expect(data?.data).toEqual([]);
      expect(data?.meta).toEqual({ current_page: 4, per_page: 15, total: 1, last_page: 1 });
    });

    it('when the team has no flags, then an empty first and last page', async () => {
      const team = await server().newTeam();
      const { data } = await team.api.GET('/api/teams/{team}/features', { params: { path: { team: team.id } } });
      expect(data?.data).toEqual([]);
      expect(data?.meta).toEqual({ current_page: 1, per_page: 15, total: 0, last_page: 1 });
    });

    it("when another team's flags exist, then they are not listed", async () => {
      const team = await server().newTeam();
      const other = await server().newTeam();
      await create(other, { key: 'theirs' });
      await create(team, { key: 'mine' });
      expect(await keys(team)).toEqual(['mine']);
    });

    it.each([
      ['per_page=101', '/query/per_page'],
      ['page=0', '/query/page'],
      ['page=999999999999999999999', '/query/page'],
      ['sort=key', '/query/sort'],
    ])('when the query has %s, then 400 names it', async (query, field) => {
      const team = await server().newTeam();
      const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/features?${query}`, { headers: { authorization: `Bearer ${team.token}` } });
      expectProblem(response, await response.json(), 400, 'Bad Request', [field]);
    });
  });

  describe('GET /api/teams/{team}/features/{feature}', () => {
    it('when the flag exists, then 200 with it', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'present', enabled: true, value: 'v' });
      const { data, response } = await read(team, 'present');
      expect(response.status).toBe(200);
      expect(data?.data).toEqual(created);
    });

    it('when the flag does not exist, then 404', async () => {
      const team = await server().newTeam();
      const { error, response } = await read(team, 'absent');
      expectProblem(response, error, 404, 'Not Found');
    });

    it('when the key differs in case, then 404', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'Cased' });
      const { error, response } = await read(team, 'cased');
      expectProblem(response, error, 404, 'Not Found');
    });

    it('when the key in the path breaks the pattern, then 400 names it', async () => {
      const team = await server().newTeam();
      const { response, body } = await send(team, 'GET', '/features/not-a-key', undefined);
      expectProblem(response, body, 400, 'Bad Request', ['/path/feature']);
    });
  });

  describe('PUT /api/teams/{team}/features/{feature}', () => {
    it('when only enabled is given, then only enabled (and updated_at) change', async () => {
      // Arrange
      const team = await server().newTeam();
      const created = await create(team, { key: 'partial', description: 'keep me', value: 'keep' });
      // Act
      const { data, response } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'partial' } },
        body: { enabled: true },
      });
      // Assert
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'partial', description: 'keep me', value: 'keep', enabled: true, created_at: created.created_at });
      expect(Date.parse(data!.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
      expect((await read(team, 'partial')).data?.data).toEqual(data?.data);
    });

    it('when enabled is set to false, then the flag is disabled', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'switch', enabled: true, value: 'v' });
      const { data } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'switch' } },
        body: { enabled: false },
      });
      expect(data?.data).toMatchObject({ enabled: false, value: 'v' });
      expect((await read(team, 'switch')).data?.data.enabled).toBe(false);
    });

    it('when value and description are set to null, then they are cleared and the rest stays', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'clear', description: 'd', enabled: true, value: 'v' });
      const { data } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'clear' } },
        body: { value: null, description: null },
      });
      expect(data?.data).toMatchObject({ key: 'clear', description: null, value: null, enabled: true });
      expect((await read(team, 'clear')).data?.data).toMatchObject({ description: null, value: null, enabled: true });
    });

    it('when the body is empty, then nothing but updated_at changes', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'same', description: 'd', enabled: true, value: 'v' });
      const { data, response } = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'same' } }, body: {} });
      expect(response.status).toBe(200);
      const { updated_at: _updated, ...rest } = created;
      expect(data?.data).toMatchObject(rest);
    });

    it('when the key changes, then the flag answers at the new key only and keeps its fields', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'old_name', description: 'kept', enabled: true, value: 'kept' });
      const { data } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'old_name' } },
        body: { key: 'new_name' },
      });
      expect(data?.data).toMatchObject({ key: 'new_name', description: 'kept', enabled: true, value: 'kept', created_at: created.created_at });
      const old = await read(team, 'old_name');
      expectProblem(old.response, old.error, 404, 'Not Found');
      expect((await read(team, 'new_name')).data?.data.value).toBe('kept');
      expect(await keys(team)).toEqual(['new_name']);
    });

    it('when the key is set to its own value, then 200', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'itself' });
      const { response, data } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'itself' } },
        body: { key: 'itself', enabled: true },
      });
      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'itself', enabled: true });
    });

    it('when the new key is taken by another flag, then 409 and neither flag changes', async () => {
      // Arrange
      const team = await server().newTeam();
      const a = await create(team, { key: 'first', value: 'a' });
      const b = await create(team, { key: 'second', value: 'b' });
      // Act
      const { error, response } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'second' } },
        body: { key: 'first', enabled: true, value: 'changed' },
      });
      // Assert
      expectProblem(response, error, 409, 'Conflict');
      expect((await read(team, 'first')).data?.data).toEqual(a);
      expect((await read(team, 'second')).data?.data).toEqual(b);
    });

    it('when the flag does not exist, then 404 and nothing is created', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'ghost' } },
        body: { enabled: true },
      });
      expectProblem(response, error, 404, 'Not Found');
      expect(await keys(team)).toEqual([]);
    });

    it.each([
      ['an unknown property', { enabled: true, rollout: 50 }, '/body/rollout'],
      ['a null key', { key: null }, '/body/key'],
      ['a null enabled', { enabled: null }, '/body/enabled'],
      ['a key breaking the pattern', { key: '_lead' }, '/body/key'],
    ])('when the body has %s, then 400 names the field and the flag is unchanged', async (_what, body, field) => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'stable', value: 'v' });
      const { response, body: problem } = await send(team, 'PUT', '/features/stable', JSON.stringify(body), 'application/json');
      expectProblem(response, problem, 400, 'Bad Request', [field]);
      expect((await read(team, 'stable')).data?.data).toEqual(created);
    });

    it('when the body is sent as application/vnd.api+json, then it is applied', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'vnd' });
      const { response, body } = await send(team, 'PUT', '/features/vnd', JSON.stringify({ value: 'from sdk' }), 'application/vnd.api+json');
      expect(response.status).toBe(200);
      expect((body as { data: Feature }).data.value).toBe('from sdk');
    });

    it('when the body is sent as text/plain, then 415 and the flag is unchanged', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'plain' });
      const { response, body } = await send(team, 'PUT', '/features/plain', JSON.stringify({ enabled: true }), 'text/plain');
      expectProblem(response, body, 415, 'Unsupported Media Type');
      expect((await read(team, 'plain')).data?.data).toEqual(created);
    });

    it('when the body is over 64 KiB, then 413 and the flag is unchanged', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'huge' });
      const { response, body } = await send(team, 'PUT', '/features/huge', JSON.stringify({ value: 'x'.repeat(65 * 1024) }), 'application/json');
      expectProblem(response, body, 413, 'Content Too Large');
      expect((await read(team, 'huge')).data?.data).toEqual(created);
    });

    it('when the body is not valid JSON, then 400 and the flag is unchanged', async () => {
      const team = await server().newTeam();
      const created = await create(team, { key: 'broken' });
      const { response, body } = await send(team, 'PUT', '/features/broken', "{enabled: true}", 'application/json');
      expectProblem(response, body, 400, 'Bad Request', ['/body']);
      expect((await read(team, 'broken')).data?.data).toEqual(created);
    });
  });

  describe('DELETE /api/teams/{team}/features/{feature}', () => {
    it('when the flag exists, then it is answered and gone, also from the config', async () => {
      // Arrange
      const team = await server().newTeam();
      const created = await create(team, { key: 'doomed', enabled: true, value: 'bye' });
      await create(team, { key: 'survivor' });
      // Act
      const { data, response } = await team.api.DELETE('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'doomed' } } });
      // Assert
      expect(response.status).toBe(200);
      expect(data?.data).toEqual(created);
      const gone = await read(team, 'doomed');
      expectProblem(gone.response, gone.error, 404, 'Not Found');
      expect(await keys(team)).toEqual(['survivor']);
      const config = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      expect(config.data?.data.features.map((f) => f.key)).toEqual(['survivor']);
    });

    it('when the flag does not exist, then 404', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.api.DELETE('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'never' } } });
      expectProblem(response, error, 404, 'Not Found');
    });

    it('when the key was just freed, then it can be created again', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'again', value: 'one' });
      await team.api.DELETE('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'again' } } });
      const recreated = await create(team, { key: 'again' });
      expect(recreated.value).toBeNull();
    });
  });

  describe('concurrent writes', () => {
    it('when a flag is deleted twice at once, then one delete answers with it and the other 404', async () => {
      const team = await server().newTeam();
      for (let i = 0; i < 10; i++) {
        const feature = `twice_${i}`;
        await create(team, { key: feature });
        const one = { path: { team: team.id, feature } };
        const results = await Promise.all([
          team.api.DELETE('/api/teams/{team}/features/{feature}', { params: one }),
          team.api.DELETE('/api/teams/{team}/features/{feature}', { params: one }),
        ]);
        expect(results.map((r) => r.response.status).sort()).toEqual([200, 404]);
      }
    });
  });

  describe('credentials and other teams', () => {
    it('when the ingest key is used on any feature operation, then 403 and nothing changes', async () => {
      // Arrange
      const team = await server().newTeam();
      const created = await create(team, { key: 'guarded' });
      const path = { team: team.id };
      const one = { path: { ...path, feature: 'guarded' } };
      // Act
      const results = [
        await team.ingest.GET('/api/teams/{team}/features', { params: { path } }),
        await team.ingest.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'sneaky' } }),
        await team.ingest.GET('/api/teams/{team}/features/{feature}', { params: one }),
        await team.ingest.PUT('/api/teams/{team}/features/{feature}', { params: one, body: { enabled: true } }),
        await team.ingest.DELETE('/api/teams/{team}/features/{feature}', { params: one }),
      ];
      // Assert
      for (const { error, response } of results) expectProblem(response, error, 403, 'Forbidden');
      expect(await keys(team)).toEqual(['guarded']);
      expect((await read(team, 'guarded')).data?.data).toEqual(created);
    });

    it("when another team's token is used on any feature operation, then 404 and nothing changes", async () => {
      // Arrange
      const team = await server().newTeam();
      const other = await server().newTeam();
      const created = await create(team, { key: 'private' });
      const path = { team: team.id };
      const one = { path: { ...path, feature: 'private' } };
      // Act
      const results = [
        await other.api.GET('/api/teams/{team}/features', { params: { path } }),
        await other.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'planted' } }),
        await other.api.GET('/api/teams/{team}/features/{feature}', { params: one }),
        await other.api.PUT('/api/teams/{team}/features/{feature}', { params: one, body: { enabled: true } }),
        await other.api.DELETE('/api/teams/{team}/features/{feature}', { params: one }),
      ];
      // Assert
      for (const { error, response } of results) expectProblem(response, error, 404, 'Not Found');
      expect(await keys(team)).toEqual(['private']);
      expect((await read(team, 'private')).data?.data).toEqual(created);
      expect(await keys(other)).toEqual([]);
    });

    it('when no credential is sent, then 401', async () => {
      const team = await server().newTeam();
      const anonymous = createApiClient(server().baseUrl);
      const list = await anonymous.GET('/api/teams/{team}/features', { params: { path: { team: team.id } } });
      expectProblem(list.response, list.error, 401, 'Unauthorized');
      const created = await anonymous.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'anon' } });
      expectProblem(created.response, created.error, 401, 'Unauthorized');
      expect(await keys(team)).toEqual([]);
    });

    it('when a method the path lacks is used, then 405 with Allow', async () => {
      const team = await server().newTeam();
      await create(team, { key: 'patchy' });
      const item = await send(team, 'PATCH', '/features/patchy', JSON.stringify({ enabled: true }), 'application/json');
      expectProblem(item.response, item.body, 405, 'Method Not Allowed');
      expect(item.response.headers.get('allow')?.split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'PUT']);
      const collection = await send(team, 'DELETE', '/features', undefined);
      expectProblem(collection.response, collection.body, 405, 'Method Not Allowed');
      expect(collection.response.headers.get('allow')?.split(/,\s*/).sort()).toEqual(['GET', 'POST']);
      expect((await read(team, 'patchy')).data?.data.enabled).toBe(false);
    });

    it('when the team does not exist, then 404', async () => {
      const team = await server().newTeam();
      const { error, response } = await team.api.GET('/api/teams/{team}/features', { params: { path: { team: 987654321 } } });
      expectProblem(response, error, 404, 'Not Found');
    });
  });
});

/**
 * The race an update of a flag can lose: it has read the flag, and the flag is deleted before its
 * write. Made to happen every time — the test holds the team's write lock (SQLite's write lock,
 * PostgreSQL's team advisory lock) and deletes the flag under it while the update, which has read
 * the flag, waits for that lock — against a server process of its own.
 */
describe.each(engines)('a flag deleted while it is being updated, on %s', (engine) => {
  afterAll(stopAllChildren);

  /** The team's write lock, held by this test: `remove` deletes the flag under it, `release` commits. */
  async function holdTeamLock(storageEnv: StorageEnv, teamId: number) {
    if (engine === 'sqlite') {
      const holder = new BetterSqlite3(join(storageEnv.DATA_DIR, 'experimentation.sqlite'));
      holder.exec('BEGIN IMMEDIATE');
      return {
        remove: async (key: string) => void holder.prepare('delete from features where team_id = ? and key = ?').run(teamId, key),
        setRules: async (key: string, rules: string) => void holder.prepare('update features set rules = ? where team_id = ? and key = ?').run(rules, teamId, key),
        // SQLite cannot tell who waits for its lock: the update gets 2.5 s to reach it (a loaded machine took more than one; the server's busy timeout is 5 s).
        waiter: async () => sleep(2500).then(() => true),
        release: async () => {
          holder.exec('COMMIT');
          holder.close();
        },
      };
    }
    const holder = new pg.Client({ connectionString: storageEnv.DATABASE_URL });
    await holder.connect();
    await holder.query('begin');
    await holder.query('select pg_advisory_xact_lock($1, $2)', [0x6261, teamId]);
    return {
      remove: async (key: string) => void (await holder.query('delete from features where team_id = $1 and key = $2', [teamId, key])),
      setRules: async (key: string, rules: string) => void (await holder.query('update features set rules = $1 where team_id = $2 and key = $3', [rules, teamId, key])),
      /**
       * Whether another session waits for this team's lock in this database (the update, past its
       * read): polled for up to 10 s. pg_locks spans the cluster, where other tests wait for locks too.
       */
      waiter: async () => {
        for (let tries = 0; tries < 200; tries++) {
          const { rows } = await holder.query(
            `select count(*)::int as waiting from pg_locks
              where locktype = 'advisory' and not granted and classid = $1 and objid = $2 and objsubid = 2
                and database = (select oid from pg_database where datname = current_database())`,
            [0x6261, teamId],
          );
          if (rows[0].waiting > 0) return true;
          await sleep(50);
        }
        return false;
      },
      release: async () => {
        await holder.query('commit');
        await holder.end();
      },
    };
  }

  it('when the flag is deleted after the update read it and before it wrote, then the update answers 404 saying so, stores nothing, and the flag stays deleted', async () => {
    // Arrange: a server process on fresh storage, a team with a flag
    const { storageEnv, cleanup } = await freshStorage(engine);
    try {
      const server = await startChild(storageEnv);
      const team = await createTeamAt(server.baseUrl, storageEnv, 'Raced flags');
      const { api } = clientsOf(server.baseUrl, team);
      const one = { path: { team: team.id, feature: 'raced' } };
      expect((await api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'raced' } })).response.status).toBe(200);

      // Act: the update starts while the test holds the team's lock; the flag is deleted under it
      const lock = await holdTeamLock(storageEnv, team.id);
      const update = api.PUT('/api/teams/{team}/features/{feature}', { params: one, body: { enabled: true } });
      const waited = await lock.waiter();
      await lock.remove('raced');
      await lock.release();
      const { response, error } = await update;

      // Assert: the race happened (the update waited for the lock, past its read) and was answered as such
      expect(waited, 'the update waited for the team lock').toBe(true);
      expectProblem(response, error, 404, 'Not Found');
      expect(error?.detail).toMatch(/was deleted by another request while this one was updating it/);
      expect((await api.GET('/api/teams/{team}/features/{feature}', { params: one })).response.status).toBe(404);
      expect((await api.GET('/api/teams/{team}/features', { params: { path: { team: team.id } } })).data?.data).toEqual([]);
    } finally {
      await stopAllChildren();
      await cleanup();
    }
  });

  it("when another update stores rules after this update read the flag, then the team's flag-characters limit counts them (409, nothing stored)", async () => {
    // Arrange: a team whose flags leave 2 144 characters of room, and a flag without rules
    const { storageEnv, cleanup } = await freshStorage(engine);
    try {
      const server = await startChild(storageEnv);
      const team = await createTeamAt(server.baseUrl, storageEnv, 'Raced limits');
      const { api } = clientsOf(server.baseUrl, team);
      const path = { team: team.id };
      for (let i = 0; i < 26; i++) {
        expect((await api.POST('/api/teams/{team}/features', { params: { path }, body: { key: `big${i}`, value: 'v'.repeat(10_000) } })).response.status).toBe(200);
      }
      expect((await api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'raced' } })).response.status).toBe(200);
      const one = { path: { team: team.id, feature: 'raced' } };

      // Act: the value update has read the flag (no rules) when rules of 1 000 characters are stored under the lock it waits for
      const lock = await holdTeamLock(storageEnv, team.id);
      const update = api.PUT('/api/teams/{team}/features/{feature}', { params: one, body: { value: 'x'.repeat(2_000) } });
      const waited = await lock.waiter();
      await lock.setRules('raced', JSON.stringify([{ type: 'rollout', percentage: 10, value: 'r'.repeat(1_000) }]));
      await lock.release();
      const { response, error } = await update;

      // Assert: 2 000 + the stored rules do not fit beside 260 000 characters: refused, the value unchanged
      expect(waited, 'the update waited for the team lock').toBe(true);
      expectProblem(response, error, 409, 'Conflict');
      const stored = await api.GET('/api/teams/{team}/features/{feature}', { params: one });
      expect(stored.data?.data.value ?? null).toBeNull();
      expect(stored.data?.data.rules).toHaveLength(1);
    } finally {
      await stopAllChildren();
      await cleanup();
    }
  });
});

