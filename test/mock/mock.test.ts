// The mock (`npm run mock`) against the real server: the bad-input suite's requests (the fuzzer's
// fixed cases and a sample of its random ones) get the same status from both, and every answer
// the mock gives — each operation's 200 and every status `Prefer` can ask for — fits the contract.
import { spawn } from 'node:child_process';
import { Agent } from 'node:http';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMockApp } from '../../server/mock/app';
import { fixedCases, randomCase, type Case, type Fixture } from '../fuzz/cases';
import { doc, operations, validatorAt, type Operation } from '../fuzz/spec';
import { arrangeTarget, sendWire, urlPath, type WireResponse } from '../fuzz/target';
import { useServer, listen } from '../support/server';
import { freePort } from '../support/process';
import type { TestTeam } from '../support/team';

const SAMPLED = 6;
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The answer fits what the operation documents for its status and media type. */
function violations(op: Operation, response: WireResponse): string[] {
  const documented = op.responses.get(response.status);
  if (!documented) return [`${response.status} is not documented`];
  if (documented.size === 0) return response.text === '' ? [] : [`${response.status} documents no body, but one came`];
  const media = response.contentType.split(';')[0]!.trim();
  const pointer = documented.get(media);
  if (!pointer) return [`${media} is not documented for ${response.status}`];
  const validate = validatorAt(pointer);
  // The config stream's body is text (its messages are checked by the conformance kit's test).
  const body = media === 'text/event-stream' ? response.text : JSON.parse(response.text);
  return validate(body) ? [] : [`the body breaks ${pointer}: ${JSON.stringify(validate.errors)}`];
}

type Media = { examples?: Record<string, unknown> };
type Response = { $ref?: string; content?: Record<string, Media> };

/** Example names of each documented answer of an operation. */
function namedExamples(op: Operation): Array<[string, string]> {
  const item = doc.paths[op.template][op.method.toLowerCase()];
  return Object.entries(item.responses as Record<string, Response>).flatMap(([status, raw]) => {
    const response: Response = raw.$ref ? doc.components.responses[raw.$ref.split('/').pop()!] : raw;
    return Object.values(response.content ?? {}).flatMap((media) => Object.keys(media.examples ?? {}).map((name): [string, string] => [status, name]));
  });
}

describe('the mock (npm run mock) against the server and the contract', () => {
  const server = useServer('sqlite');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let target: TestTeam;
  let fixture: Fixture;
  let mockUrl: string;
  let closeMock: () => Promise<void>;

  beforeAll(async () => {
    ({ target, fixture } = await arrangeTarget(server()));
    ({ baseUrl: mockUrl, close: closeMock } = await listen(createMockApp({ logger: pino({ level: 'silent' }), team: target.id, token: target.token, ingestKey: target.ingestKey })));
  });
  afterAll(async () => {
    agent.destroy();
    await closeMock();
  });

  /**
   * The bad-input cases whose answer does not depend on stored data: all that break the contract
   * or lack a valid credential. A valid request naming a key that does not exist is left out — the
   * server looks it up (404), the mock has nothing to look up and answers its example.
   */
  function comparable(c: Case): boolean {
    return c.mustFail && c.absent.every((name) => name === 'team');
  }

  /** What the authorization matrix and the routing add: the team's ingest key, a team out of reach, a method or path the contract lacks. */
  function accessCases(op: Operation): Array<Pick<Case, 'label' | 'request'>> {
    const base = { method: op.method, path: fixture.present, query: '', authorization: `Bearer ${target.token}`, ...(op.body && { contentType: 'application/json', body: JSON.stringify(op.body.example) }) };
    const cases = [
      { label: 'the ingest key', request: { ...base, authorization: `Bearer ${target.ingestKey}` } },
      { label: 'a method the path lacks', request: { ...base, method: 'PATCH' } },
      { label: 'a path the contract lacks', request: { ...base, path: { ...fixture.present, team: `${fixture.present.team}/unknown` } } },
    ];
    if (op.pathParams.length > 0) cases.push({ label: 'a team out of reach', request: { ...base, path: { ...fixture.present, team: String(target.id + 1000) } } });
    return cases;
  }

  it('when the bad-input suite is sent to the mock and to the server, then every answer has the same status', async () => {
    const tally = new Map<number, number>();
    const differences: string[] = [];
    let compared = 0;
    for (const op of operations) {
      const fuzzed = [...fixedCases(op, fixture), ...fc.sample(randomCase(op, fixture), { seed: 20_251_124 + op.index, numRuns: SAMPLED })];
      for (const c of [...fuzzed.filter(comparable), ...accessCases(op)]) {
        compared++;
        const fromServer = await sendWire(server().baseUrl, agent, op, c.request);
        const fromMock = await sendWire(mockUrl, agent, op, c.request);
        if (fromServer.status === fromMock.status) tally.set(fromServer.status, (tally.get(fromServer.status) ?? 0) + 1);
        else differences.push(`${op.label} — ${c.label}: server ${fromServer.status} ${fromServer.text.slice(0, 200)}, mock ${fromMock.status} ${fromMock.text.slice(0, 200)} (${urlPath(op, c.request).slice(0, 120)})`);
      }
    }
    const agreed = [...tally.values()].reduce((a, b) => a + b, 0);
    console.log(`[mock] ${compared} bad-input requests to ${operations.length} operations: ${agreed} same status (${[...tally].sort().map(([status, n]) => `${status}: ${n}`).join(', ')}), ${differences.length} different`);
    expect(differences).toEqual([]);
    expect(compared).toBeGreaterThan(1000);
    expect([...tally.keys()].sort()).toEqual(expect.arrayContaining([400, 401, 403, 404, 405, 413, 415]));
    // Thousands of requests in turn to two servers: 73 s on a machine loaded 15 deep, past the default 120 s beside heavier work.
  }, 600_000);

  it.each(operations.map((op) => [op.label, op] as const))('%s: the 200, and every status Prefer asks for, answers as documented', async (_label, op) => {
    const request = { method: op.method, path: fixture.present, query: '', authorization: `Bearer ${target.token}`, ...(op.body && { contentType: 'application/json', body: JSON.stringify(op.body.example) }) };
    const asked = [undefined, ...[...op.responses.keys()].map(String)];
    for (const code of asked) {
      const response = await sendWire(mockUrl, agent, op, request, code === undefined ? {} : { prefer: `code=${code}` });
      expect(response.status, `Prefer: code=${code}`).toBe(code === undefined ? 200 : Number(code));
      expect(violations(op, response), `Prefer: code=${code}`).toEqual([]);
    }
    for (const [status, name] of namedExamples(op)) {
      const response = await sendWire(mockUrl, agent, op, request, { prefer: `code=${status}, example=${name}` });
      expect(response.status, `${status} ${name}`).toBe(Number(status));
      expect(violations(op, response), `${status} ${name}`).toEqual([]);
    }
  });

  it('when Prefer asks for a status the operation does not document, then 400 names the header', async () => {
    const response = await fetch(`${mockUrl}/api/health`, { headers: { prefer: 'code=418' } });
    const body = (await response.json()) as { errors: Array<{ path: string }> };
    expect(response.status).toBe(400);
    expect(body.errors.map((e) => e.path)).toEqual(['/header/prefer']);
  });

  it.each(['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'])('when Prefer asks for code=%s, a name every object inherits, then 400 names the header', async (code) => {
    const response = await fetch(`${mockUrl}/api/health`, { headers: { prefer: `code=${code}` } });
    const body = (await response.json()) as { errors: Array<{ path: string }> };
    expect(response.status).toBe(400);
    expect(body.errors.map((e) => e.path)).toEqual(['/header/prefer']);
  });

  it.each([
    ['page=0x10', '/query/page'],
    ['page=1e2', '/query/page'],
    ['page=%2B1', '/query/page'],
    ['per_page=%20100', '/query/per_page'],
    ['page=101&per_page=100', '/query/page'],
  ])('when the team list is asked for %s, then the mock, like the server, answers 400 naming the parameter', async (query, field) => {
    const answers = await Promise.all([mockUrl, server().baseUrl].map((base) => fetch(`${base}/api/teams?${query}`, { headers: { authorization: `Bearer ${target.token}` } })));
    for (const response of answers) {
      const body = (await response.json()) as { errors: Array<{ path: string }> };
      expect(response.status).toBe(400);
      expect(body.errors.map((e) => e.path)).toEqual([field]);
    }
  });

  it.each([
    ['PUT', 'events/purchase', { cap: 1.1234567 }, '/body/cap'],
    ['POST', 'events', { key: 'capped_seven', cap: 0.0000001 }, '/body/cap'],
    ['POST', 'ingest', { participant: 'p-1', event: 'purchase', value: 2.5000001 }, '/body/value'],
    ['POST', 'ingest/batch', { items: [{ participant: 'p-1' }, { participant: 'p-2', event: 'purchase', value: 1.1234567 }] }, '/body/items/1/value'],
  ])('when %s %s carries a number with seven decimals, then the mock, like the server, answers 400 naming it', async (method, path, body, field) => {
    const credential = path.startsWith('ingest') ? target.ingestKey : target.token;
    const answers = await Promise.all(
      [mockUrl, server().baseUrl].map((base) =>
        fetch(`${base}/api/teams/${target.id}/${path}`, { method, headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      ),
    );
    const [fromMock, fromServer] = await Promise.all(answers.map(async (response) => ({ status: response.status, body: (await response.json()) as { errors: Array<{ path: string }> } })));
    expect(fromMock).toEqual(fromServer);
    expect(fromMock.status).toBe(400);
    expect(fromMock.body.errors.map((e) => e.path)).toEqual([field]);
  });

  it('when Prefer asks for the 404 of a keyed resource, then its detail names the key and team the request named', async () => {
    const answer = await fetch(`${mockUrl}/api/teams/${target.id}/experiments/x`, { headers: { authorization: `Bearer ${target.token}`, prefer: 'code=404' } });
    const body = (await answer.json()) as { detail: string };
    expect(answer.status).toBe(404);
    expect(body.detail).toBe(`No experiment 'x' in team ${target.id}.`);
  });

  it('when npm run mock is started with a port and credentials, then it answers with them and refuses others', async () => {
    const port = await freePort();
    const child = spawn('npm', ['run', '-s', 'mock', '--', '--port', String(port), '--team', '7', '--token', 'front-end-token', '--ingest-key', 'front-end-key'], {
      cwd: root,
      env: { ...process.env, LOG_LEVEL: 'warn' },
      stdio: 'ignore',
      detached: true,
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      await expect.poll(() => fetch(`${base}/api/health`).then((r) => r.status, () => 0), { timeout: 60_000, interval: 250 }).toBe(200);
      const get = (path: string, credential: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${credential}` } }).then((r) => r.status);
      expect(await get('/api/teams/7/config', 'front-end-key')).toBe(200);
      expect(await get('/api/teams/7/events', 'front-end-token')).toBe(200);
      expect(await get('/api/teams/7/events', 'front-end-key')).toBe(403);
      expect(await get('/api/teams/8/events', 'front-end-token')).toBe(404);
      expect(await get('/api/teams/7/events', 'someone-else')).toBe(401);
      expect((await fetch(`${base}/openapi.json`)).status).toBe(200);
      // Its root page links only what the mock serves (no results page; /docs once npm run docs has built it)
      const links = [...(await (await fetch(`${base}/`)).text()).matchAll(/<a href="([^"]+)"/g)].map((match) => match[1]!);
      expect(links).toEqual(['/docs', '/openapi.json', '/changelog']);
      for (const link of links.filter((l) => l !== '/docs')) expect((await fetch(`${base}${link}`)).status, link).toBe(200);
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
    }
  });
});
