// Attribute values may be arrays of scalars (tags), which targeting conditions read with $in,
// $all, $elemMatch, $size. Every writer of attributes takes them and every reader returns them.
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { ingestOk } from '../support/fixtures';
import type { TestTeam } from '../support/team';

const TAGGED = { plan: 'pro', tags: ['beta', 'mobile'], scores: [3, 4.5], flags: [true, false], mixed: ['a', 1, true], none: [] };

describe.each(engines)('array attributes on %s', (engine) => {
  const server = useServer(engine);

  const read = async (team: TestTeam, key: string) => {
    const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: key } } });
    return data?.data.attributes;
  };

  it('when a participant is created with arrays of strings, numbers and booleans, then they are stored and listed as given', async () => {
    const team = await server().newTeam();
    const created = await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1', attributes: TAGGED } });
    expect(created.response.status).toBe(200);
    expect(created.data?.data.attributes).toEqual(TAGGED);
    expect(await read(team, 'user-1')).toEqual(TAGGED);
    const list = await team.api.GET('/api/teams/{team}/participants', { params: { path: { team: team.id } } });
    expect(list.data?.data[0].attributes).toEqual(TAGGED);
  });

  it('when a participant is updated with an array, then it replaces the stored attributes', async () => {
    const team = await server().newTeam();
    await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1', attributes: { plan: 'free' } } });
    const updated = await team.api.PUT('/api/teams/{team}/participants/{participant}', {
      params: { path: { team: team.id, participant: 'user-1' } },
      body: { attributes: { tags: ['a', 'b'] } },
    });
    expect(updated.response.status).toBe(200);
    expect(updated.data?.data.attributes).toEqual({ tags: ['a', 'b'] });
    expect(await read(team, 'user-1')).toEqual({ tags: ['a', 'b'] });
  });

  it('when a participant is ingested with arrays, new and then existing, then they are stored and answered', async () => {
    const team = await server().newTeam();
    const first = await ingestOk(team, { participant: { key: 'user-1', attributes: TAGGED } });
    expect(first.participant.attributes).toEqual(TAGGED);
    const second = await ingestOk(team, { participant: { key: 'user-1', attributes: { tags: ['gamma'] } } });
    expect(second.participant.attributes).toEqual({ tags: ['gamma'] });
    expect(await read(team, 'user-1')).toEqual({ tags: ['gamma'] });
  });

  it('when a batch ingests participants with arrays, then each is stored', async () => {
    const team = await server().newTeam();
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/ingest/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ participant: { key: 'a', attributes: { tags: ['x'] } } }, { participant: { key: 'b', attributes: { tags: [1, 2] } } }] }),
    });
    expect(response.status).toBe(200);
    expect(await read(team, 'a')).toEqual({ tags: ['x'] });
    expect(await read(team, 'b')).toEqual({ tags: [1, 2] });
  });

  it('when an array holds 100 items and strings of 200 characters, then it is stored', async () => {
    const team = await server().newTeam();
    const attributes = { many: Array.from({ length: 100 }, (_, i) => i), long: ['x'.repeat(200)] };
    const created = await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1', attributes } });
    expect(created.response.status).toBe(200);
    expect(await read(team, 'user-1')).toEqual(attributes);
  });

  const REFUSED: Array<[string, Record<string, unknown>, string]> = [
    ['a nested array', { tags: [['a']] }, '/body/attributes/tags'],
    ['an object in an array', { tags: [{ a: 1 }] }, '/body/attributes/tags'],
    ['null in an array', { tags: ['a', null] }, '/body/attributes/tags'],
    ['an array of 101 items', { tags: Array.from({ length: 101 }, (_, i) => i) }, '/body/attributes/tags'],
    ['a string of 201 characters in an array', { tags: ['x'.repeat(201)] }, '/body/attributes/tags'],
    ['an object', { address: { city: 'Berlin' } }, '/body/attributes/address'],
  ];

  it.each(REFUSED)('when a created participant\'s attribute is %s, then 400 names the attribute and nothing is created', async (_, attributes, path) => {
    const team = await server().newTeam();
    const { response, error } = await team.api.POST('/api/teams/{team}/participants', {
      params: { path: { team: team.id } },
      body: { key: 'user-1', attributes: attributes as never },
    });
    expect(response.status).toBe(400);
    expect(error?.errors?.map((e) => e.path)).toContain(path);
    const found = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-1' } } });
    expect(found.response.status).toBe(404);
  });

  it.each(REFUSED)('when an updated participant\'s attribute is %s, then 400 names the attribute and the stored ones stay', async (_, attributes, path) => {
    const team = await server().newTeam();
    await team.api.POST('/api/teams/{team}/participants', { params: { path: { team: team.id } }, body: { key: 'user-1', attributes: { tags: ['kept'] } } });
    const { response, error } = await team.api.PUT('/api/teams/{team}/participants/{participant}', {
      params: { path: { team: team.id, participant: 'user-1' } },
      body: { attributes: attributes as never },
    });
    expect(response.status).toBe(400);
    expect(error?.errors?.map((e) => e.path)).toContain(path);
    expect(await read(team, 'user-1')).toEqual({ tags: ['kept'] });
  });

  it.each(REFUSED)('when an ingested participant\'s attribute is %s, then 400 names the attribute and nothing is stored', async (_, attributes, path) => {
    const team = await server().newTeam();
    const { response, error } = await team.ingest.POST('/api/teams/{team}/ingest', {
      params: { path: { team: team.id } },
      body: { participant: { key: 'user-1', attributes: attributes as never } },
    });
    expect(response.status).toBe(400);
    expect(error?.errors?.map((e) => e.path)).toContain(path.replace('/body/', '/body/participant/'));
    const found = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-1' } } });
    expect(found.response.status).toBe(404);
  });
});
