// Strings are well-formed Unicode and keys cannot hide what they are: a lone surrogate escaped in
// JSON, a C1 control or a bidirectional override in a participant key, and team ids written
// other than as plain decimal numbers are each a 400 naming the field, and store nothing.
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment } from '../support/fixtures';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

describe.each(engines)('well-formed strings on %s', (engine) => {
  const server = useServer(engine);

  async function send(team: TestTeam, method: string, path: string, body?: string, credential = team.token) {
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}${path}`, {
      method,
      headers: { authorization: `Bearer ${credential}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body,
    });
    return { response, body: (await response.json()) as { data?: unknown; errors?: Array<{ path: string }> } };
  }

  async function participantKeys(team: TestTeam): Promise<string[]> {
    const { body } = await send(team, 'GET', '/participants?per_page=100');
    return (body.data as Array<{ key: string }>).map((participant) => participant.key);
  }

  it.each([
    ['a participant key in an ingest', 'POST', '/ingest', '{"participant":"x\\ud800y"}', '/body/participant'],
    ['a participant object key in an ingest', 'POST', '/ingest', '{"participant":{"key":"x\\udfffy"}}', '/body/participant/key'],
    ['a participant key', 'POST', '/participants', '{"key":"x\\ud800y"}', '/body/key'],
    ['notes', 'POST', '/participants', '{"key":"ok","notes":"a\\ud83d"}', '/body/notes'],
    ['an attribute value', 'POST', '/participants', '{"key":"ok","attributes":{"plan":"\\udc00"}}', '/body/attributes/plan'],
    ['an attribute name', 'POST', '/participants', '{"key":"ok","attributes":{"p\\ud800":"pro"}}', '/body/attributes/p\ufffd'],
    ['an event description', 'POST', '/events', '{"key":"ok","description":"\\ud800"}', '/body/description'],
    ['a flag value', 'POST', '/features', '{"key":"ok","value":"\\udbff"}', '/body/value'],
  ])('when %s escapes a lone surrogate, then 400 names it and nothing is stored', async (_what, method, path, json, field) => {
    const team = await server().newTeam();
    await createExperiment(team, 'running');

    const { response, body } = await send(team, method, path, json, path === '/ingest' ? team.ingestKey : team.token);

    expectProblem(response, body, 400, 'Bad Request', [field]);
    expect(await participantKeys(team)).toEqual([]);
    const { body: events } = await send(team, 'GET', '/events');
    expect((events.data as Array<{ key: string }>).map((e) => e.key)).toEqual(['goal']);
  });

  it('when two keys differ only in their lone surrogates, then neither is stored, so they cannot merge', async () => {
    const team = await server().newTeam();
    const first = await send(team, 'POST', '/participants', '{"key":"x\\ud800y"}');
    const second = await send(team, 'POST', '/participants', '{"key":"x\\udfffy"}');
    expect([first.response.status, second.response.status]).toEqual([400, 400]);
    expect(await participantKeys(team)).toEqual([]);
  });

  it.each([
    ['a C1 control (U+0085)', 'a\u0085b'],
    ['a right-to-left override (U+202E)', 'abc\u202Efdp.exe'],
    ['a left-to-right isolate (U+2066)', 'a\u2066b'],
    ['a right-to-left mark (U+200F)', 'a\u200Fb'],
  ])('when a participant key holds %s, then ingest, create and the path refuse it', async (_what, key) => {
    const team = await server().newTeam();

    const ingested = await send(team, 'POST', '/ingest', JSON.stringify({ participant: key }), team.ingestKey);
    const created = await send(team, 'POST', '/participants', JSON.stringify({ key }));
    const read = await send(team, 'GET', `/participants/${encodeURIComponent(key)}`);

    expectProblem(ingested.response, ingested.body, 400, 'Bad Request', ['/body/participant']);
    expectProblem(created.response, created.body, 400, 'Bad Request', ['/body/key']);
    expectProblem(read.response, read.body, 400, 'Bad Request', ['/path/participant']);
    expect(await participantKeys(team)).toEqual([]);
  });

  it('when a path or a query is percent-encoded but not UTF-8, then 400', async () => {
    const team = await server().newTeam();
    const path = await send(team, 'GET', '/participants/x%ED%A0%80y');
    const query = await send(team, 'GET', '/participants?page=%ED%A0%80');
    expect(path.response.status).toBe(400);
    expect(query.response.status).toBe(400);
  });

  it('when a key is well-formed and only unusual (non-ASCII, emoji), then it is stored and found again', async () => {
    const team = await server().newTeam();
    const key = 'Zürich-東京-🧪';
    expect((await send(team, 'POST', '/participants', JSON.stringify({ key }))).response.status).toBe(200);
    expect((await send(team, 'GET', `/participants/${encodeURIComponent(key)}`)).response.status).toBe(200);
    expect(await participantKeys(team)).toEqual([key]);
  });
});

describe.each(engines)('team ids on %s', (engine) => {
  const server = useServer(engine);

  const writings: Array<[string, (id: number) => string]> = [
    ['in hexadecimal', (id) => `0x${id.toString(16)}`],
    ['with a fraction', (id) => `${id}.0`],
    ['with an exponent', (id) => `${id}e0`],
    ['after a space', (id) => `%20${id}`],
    ['before a space', (id) => `${id}%20`],
    ['with a leading zero', (id) => `0${id}`],
    ['with a plus sign', (id) => `%2B${id}`],
  ];

  it.each(writings)('when the team id is written %s, then 400 names /path/team, never the team', async (_how, write) => {
    const team = await server().newTeam();

    const response = await fetch(`${server().baseUrl}/api/teams/${write(team.id)}/events`, { headers: { authorization: `Bearer ${team.token}` } });

    expectProblem(response, await response.json(), 400, 'Bad Request', ['/path/team']);
  });

  it('when the team id is plain decimal, then it answers the team', async () => {
    const team = await server().newTeam();
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}`, { headers: { authorization: `Bearer ${team.token}` } });
    expect(response.status).toBe(200);
  });
});
