import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

/**
 * The rules of info.description that the middleware and the validator answer before any
 * route runs: removed operations, 405, case-sensitive paths, query and body validation,
 * media types, the problem shape — each status checked against the bundled contract.
 */

interface SpecOperation {
  operationId: string;
  responses: Record<string, unknown>;
}
const spec = JSON.parse(readFileSync(fileURLToPath(new URL('../../generated/openapi.json', import.meta.url)), 'utf8')) as {
  paths: Record<string, Record<string, SpecOperation>>;
  'x-removed-operations': Array<{ method: string; path: string }>;
};
const templates = Object.keys(spec.paths).map((template) => ({
  template,
  pattern: new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]+') + '$'),
}));

/** The contract's operation for a concrete request, or undefined when the contract has none. */
function operationFor(method: string, path: string): SpecOperation | undefined {
  const found = templates.find((candidate) => candidate.pattern.test(path));
  return found && spec.paths[found.template][method.toLowerCase()];
}

interface Exchange {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

/** The removed operations as the document lists them (its `x-removed-operations`): adding one there tests it here. */
const REMOVED = spec['x-removed-operations'];

/** Every key anywhere in a JSON value. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, nested]) => [key, ...keysOf(nested)]);
}

describe.each(engines)('HTTP contract rules on %s', (engine) => {
  const server = useServer(engine);
  let team: TestTeam;

  /**
   * Sends a request with the team's token (unless headers override it) and holds its answer to the
   * contract at once, in the test that sent it: the status is documented on its operation (405 is
   * documented once, in info.description; a path the contract lacks can only be 404), and any
   * error is a problem body (a 400 naming at least one field).
   */
  async function send(method: string, path: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<Exchange> {
    const response = await fetch(server().baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${team.token}`, ...init.headers },
      body: init.body,
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    const exchange = { method, path: new URL(path, 'http://x').pathname, status: response.status, headers: response.headers, text, body };
    expectDocumented(exchange);
    return exchange;
  }

  function expectDocumented(exchange: Exchange): void {
    const named = `${exchange.method} ${exchange.path} → ${exchange.status}`;
    const operation = operationFor(exchange.method, exchange.path);
    if (exchange.status !== 405) {
      if (operation) expect(Object.keys(operation.responses), named).toContain(String(exchange.status));
      else expect(exchange.status, named).toBe(404);
    }
    if (exchange.status < 400 || exchange.method === 'HEAD') return;
    expect(exchange.headers.get('content-type'), named).toMatch(/^application\/problem\+json/);
    expect(exchange.body, named).toMatchObject({ type: expect.any(String), title: expect.any(String), status: exchange.status, detail: expect.any(String) });
    if (exchange.status === 400) expect((exchange.body as { errors: unknown[] }).errors.length, named).toBeGreaterThan(0);
  }

  function json(method: string, path: string, body: unknown, contentType = 'application/json') {
    return send(method, path, { headers: { 'content-type': contentType }, body: JSON.stringify(body) });
  }

  /** A problem body: problem+json with type, title, status (equal to the HTTP status) and detail. */
  function expectProblem(exchange: Exchange, status: number): { errors?: Array<{ path: string; message: string }> } {
    expect(exchange.status, exchange.text).toBe(status);
    expect(exchange.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(exchange.body).toMatchObject({ type: expect.any(String), title: expect.any(String), status, detail: expect.any(String) });
    return exchange.body as { errors?: Array<{ path: string; message: string }> };
  }

  const teamPath = () => `/api/teams/${team.id}`;

  beforeAll(async () => {
    team = await server().newTeam();
    const path = { team: team.id };
    const experiment = { ...path, experiment: 'checkout' };
    const setup = [
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } }),
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'checkout', event: 'purchase' } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'control', control: true } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'green' } }),
    ];
    for (const { response } of setup) expect(response.status).toBe(200);
  });

  describe('removed operations', () => {
    it.each(REMOVED.map((removed) => [removed.method, removed.path]))('when %s %s is called on existing resources with a valid token, then 404 problem — 405 where the path has other methods', async (method, template) => {
      const path = template.replace('{team}', String(team.id)).replace('{event}', 'purchase').replace('{experiment}', 'checkout').replace('{variant}', 'green');
      const exchange = await json(method, path, { participant: 'user-42' });
      const otherMethods = templates.find((candidate) => candidate.pattern.test(path));
      expectProblem(exchange, otherMethods ? 405 : 404);
      expect(operationFor(method, exchange.path)).toBeUndefined();
    });
  });

  describe('methods a path lacks', () => {
    const allowOf = (exchange: Exchange) =>
      (exchange.headers.get('allow') ?? '')
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean)
        .sort();

    it('when PATCH is sent to an event, then 405 with Allow listing exactly GET, PUT, DELETE', async () => {
      const exchange = await json('PATCH', `${teamPath()}/events/purchase`, { description: 'x' });
      expectProblem(exchange, 405);
      expect(allowOf(exchange)).toEqual(['DELETE', 'GET', 'PUT']);
    });

    it.each([
      ['HEAD', '/api/user', ['GET']],
      ['OPTIONS', '/api/user', ['GET']],
      ['HEAD', '/api/teams/{team}/events', ['GET', 'POST']],
      ['OPTIONS', '/api/teams/{team}/events', ['GET', 'POST']],
    ])('when %s is sent to %s, then 405 with Allow listing exactly its methods', async (method, template, allowed) => {
      const exchange = await send(method, (template as string).replace('{team}', String(team.id)));
      expect(exchange.status).toBe(405);
      expect(allowOf(exchange)).toEqual([...(allowed as string[])].sort());
      if (method !== 'HEAD') expectProblem(exchange, 405);
    });

    it('when the path has its methods checked against the contract, then Allow agrees with the bundled document', async () => {
      const exchange = await send('PATCH', `${teamPath()}/experiments/checkout/variants/green`);
      expect(allowOf(exchange)).toEqual(
        Object.keys(spec.paths['/api/teams/{team}/experiments/{experiment}/variants/{variant}'])
          .filter((key) => ['get', 'put', 'post', 'delete', 'patch'].includes(key))
          .map((m) => m.toUpperCase())
          .sort(),
      );
    });
  });

  describe('case-sensitive routing', () => {
    it.each(['/API/user', '/api/User', '/api/Teams'])('when %s is asked for, then 404 problem', async (path) => {
      expectProblem(await send('GET', path), 404);
    });

    it('when an event key differs only in case, then 404', async () => {
      expectProblem(await send('GET', `${teamPath()}/events/Purchase`), 404);
    });
  });

  describe('query parameters', () => {
    it('when an unknown query parameter is sent, then 400 naming /query/<name>', async () => {
      const problem = expectProblem(await send('GET', `${teamPath()}/events?colour=green`), 400);
      expect(problem.errors?.map((e) => e.path)).toContain('/query/colour');
    });

    it.each(['999999999999999999999', '-1', '0', 'abc', '1.5'])('when page=%s, then 400 naming /query/page', async (page) => {
      const problem = expectProblem(await send('GET', `${teamPath()}/events?page=${page}`), 400);
      expect(problem.errors?.map((e) => e.path)).toContain('/query/page');
    });

    it.each(['0', '101', 'x'])('when per_page=%s, then 400', async (perPage) => {
      expectProblem(await send('GET', `${teamPath()}/events?per_page=${perPage}`), 400);
    });

    it('when the team id is not an integer, then 400 naming /path/team', async () => {
      const problem = expectProblem(await send('GET', '/api/teams/abc/events'), 400);
      expect(problem.errors?.map((e) => e.path)).toContain('/path/team');
    });
  });

  describe('request bodies', () => {
    it('when the JSON is malformed, then 400', async () => {
      expectProblem(await send('POST', `${teamPath()}/events`, { headers: { 'content-type': 'application/json' }, body: '{"key": "a",' }), 400);
    });

    it.each(['[]', '"x"', '42', 'null', 'true'])('when the body is %s, then 400', async (body) => {
      expectProblem(await send('POST', `${teamPath()}/events`, { headers: { 'content-type': 'application/json' }, body }), 400);
    });

    it('when the body is larger than 64 KiB, then 413', async () => {
      const exchange = await json('POST', `${teamPath()}/events`, { key: 'big', description: 'x'.repeat(64 * 1024) });
      expectProblem(exchange, 413);
    });

    it('when the body is just under 64 KiB, then it is not refused for its size', async () => {
      const padding = 64 * 1024 - JSON.stringify({ key: 'k', description: '' }).length - 1;
      const exchange = await json('POST', `${teamPath()}/events`, { key: 'k', description: 'x'.repeat(padding) });
      expect(exchange.status).not.toBe(413);
    });

    it.each(['gzip', 'deflate', 'br'])('when the body does not decode as Content-Encoding %s says, then 400', async (encoding) => {
      const exchange = await send('POST', `${teamPath()}/events`, {
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        body: '{"key":"not_compressed"}',
      });
      expectProblem(exchange, 400);
    });

    it('when a gzip body inflates beyond 64 KiB, then 413', async () => {
      const body = gzipSync(JSON.stringify({ key: 'bomb', description: 'x'.repeat(200 * 1024) }));
      expect(body.length).toBeLessThan(64 * 1024);
      const response = await fetch(`${server().baseUrl}${teamPath()}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${team.token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body,
      });
      expect(response.status).toBe(413);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    });

    it.each(['text/plain', 'application/xml'])('when the body is sent as %s, then 415', async (contentType) => {
      const body = contentType === 'text/plain' ? '{"key":"plain"}' : '<event><key>xml</key></event>';
      expectProblem(await send('POST', `${teamPath()}/events`, { headers: { 'content-type': contentType }, body }), 415);
    });

    it('when an unknown property is sent, then 400 naming it', async () => {
      const problem = expectProblem(await json('POST', `${teamPath()}/events`, { key: 'extra', colour: 'green' }), 400);
      expect(problem.errors?.map((e) => e.path)).toContain('/body/colour');
    });

    it('when algorithm_type is sent as application/vnd.api+json, then 400 naming it and nothing is created', async () => {
      const exchange = await json(
        'POST',
        `${teamPath()}/experiments`,
        { key: 'with_algorithm', event: 'purchase', algorithm_type: 'random' },
        'application/vnd.api+json',
      );
      const problem = expectProblem(exchange, 400);
      expect(problem.errors?.map((e) => e.path)).toContain('/body/algorithm_type');
      expectProblem(await send('GET', `${teamPath()}/experiments/with_algorithm`), 404);
    });

    it('when a valid create is sent as application/vnd.api+json with that Accept, then 200 as application/json', async () => {
      const exchange = await send('POST', `${teamPath()}/events`, {
        headers: { 'content-type': 'application/vnd.api+json', accept: 'application/vnd.api+json' },
        body: JSON.stringify({ key: 'sdk_event', type: 'count' }),
      });
      expect(exchange.status, exchange.text).toBe(200);
      expect(exchange.headers.get('content-type')).toMatch(/^application\/json/);
      expect(exchange.body).toMatchObject({ data: { key: 'sdk_event', type: 'count' } });
    });

    it('when a read asks for application/vnd.api+json, then the answer is still application/json', async () => {
      const exchange = await send('GET', `${teamPath()}/events/sdk_event`, { headers: { accept: 'application/vnd.api+json' } });
      expect(exchange.status, exchange.text).toBe(200);
      expect(exchange.headers.get('content-type')).toMatch(/^application\/json/);
    });
  });

  describe('bodies', () => {
    it('when reads embed everything a team can, then no body has a jsonapi or included key', async () => {
      const reads = [
        await send('GET', `/api/teams?include=events,experiments.variants,participants,features`),
        await send('GET', `${teamPath()}?include=events,experiments.variants,participants,features`),
        await send('GET', `${teamPath()}/experiments?include=variants`),
        await send('GET', `${teamPath()}/experiments/checkout/variants`),
        await send('GET', `${teamPath()}/config`),
      ];
      for (const read of reads) expect(read.status, read.text).toBe(200);
      const keys = reads.flatMap((exchange) => keysOf(exchange.body));
      expect(keys.length).toBeGreaterThan(50);
      expect(keys).not.toContain('jsonapi');
      expect(keys).not.toContain('included');
    });
  });
});

describe.each(engines)('the request log on %s', (engine) => {
  const server = useServer(engine);
  const lines: string[] = [];
  // A second app on the same storage whose logger writes into `lines`.
  const app = useServer(() => ({ beside: server(), app: { logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }) } }));

  it('when requests carry credentials, then the log has the request lines but no credential', async () => {
    const team = await server().newTeam();
    const forged = 'est_' + 'A'.repeat(43);
    const calls = [
      { path: '/api/user', credential: team.token, status: 200 },
      { path: `/api/teams/${team.id}/config`, credential: team.ingestKey, status: 200 },
      { path: '/api/user', credential: forged, status: 401 },
      { path: '/api/user', credential: team.ingestKey, status: 403 },
      { path: `/api/user?access_token=${team.token}`, credential: team.token, status: 400 },
    ];
    for (const call of calls) {
      const response = await fetch(app().baseUrl + call.path, { headers: { authorization: `Bearer ${call.credential}`, cookie: `session=${call.credential}` } });
      expect(response.status).toBe(call.status);
      await response.arrayBuffer();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const log = lines.join('');
    for (const call of calls) {
      expect(log).not.toContain(call.credential);
      expect(log).not.toContain(call.credential.slice(4)); // the random part alone neither
    }
    type Line = { msg?: string; req?: { id?: number; url?: string; method?: string; remoteAddress?: string; userAgent?: string }; res?: { statusCode?: number }; responseTime?: number };
    const requests = lines.map((line) => JSON.parse(line) as Line).filter((entry) => entry.req);
    expect(requests.map((entry) => [entry.req?.method, entry.req?.url, entry.res?.statusCode])).toEqual(
      calls.map((call) => ['GET', call.path.replace(/=.*$/, '=[Redacted]'), call.status]),
    );
    // One line each, when the response has finished: id, address, user agent, status, time.
    expect(new Set(requests.map((entry) => entry.req?.id)).size).toBe(calls.length);
    for (const entry of requests) {
      expect(entry).toMatchObject({ msg: 'request completed', req: { id: expect.any(Number), remoteAddress: '127.0.0.1', userAgent: expect.any(String) }, responseTime: expect.any(Number) });
    }
  });

  it('when a credential stands anywhere in the URL — a bare query, after a semicolon, in the path, percent-encoded — then the log redacts it and keeps the rest', async () => {
    // Arrange
    const team = await server().newTeam();
    const encoded = team.ingestKey.replace('_', '%5F');
    const calls = [
      `/api/user?${team.token}`,
      `/api/user;${team.token}`,
      `/api/user?x;${team.ingestKey}`,
      `/api/teams/${team.id}/participants/${team.token}`,
      `/api/teams/${team.id}/participants/${encoded}`,
      `/api/teams/${team.id}/participants/visitor-${team.ingestKey}`,
      `/api/teams/${team.id}/experiments/test_experiment`,
    ];
    const before = lines.length;

    // Act
    for (const path of calls) {
      const response = await fetch(app().baseUrl + path, { headers: { authorization: `Bearer ${team.token}` } });
      await response.arrayBuffer();
    }
    await expect.poll(() => lines.length - before).toBeGreaterThanOrEqual(calls.length);

    // Assert
    const logged = lines.slice(before).map((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url).filter((url) => url !== undefined);
    const log = logged.join('\n');
    for (const secret of [team.token, team.ingestKey, team.token.slice(4), team.ingestKey.slice(4), encoded]) expect(log).not.toContain(secret);
    expect(logged).toEqual([
      '/api/user?est_[Redacted]=[Redacted]',
      '/api/user;est_[Redacted]',
      '/api/user?x;esk_[Redacted]=[Redacted]',
      `/api/teams/${team.id}/participants/est_[Redacted]`,
      `/api/teams/${team.id}/participants/esk_[Redacted]`,
      `/api/teams/${team.id}/participants/visitor-esk_[Redacted]`,
      `/api/teams/${team.id}/experiments/test_experiment`,
    ]);
  });
});
