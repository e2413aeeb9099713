import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSettings } from '../../server/settings/settings';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

/**
 * Rate limiting (info.description, "Limits"): a budget per credential and, for calls without a
 * valid one, per client address; 429 problem with Retry-After once it is used up, and
 * RateLimit-Limit / -Remaining / -Reset on every /api answer. Each block runs its own app with
 * small budgets on the engine's storage; requests leave from their own loopback address
 * (127.0.0.x) so that the per-address budgets of different tests do not meet.
 */

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  body: unknown;
}

interface Call {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The loopback address the request leaves from. */
  from?: string;
  token?: string;
}

function call(baseUrl: string, path: string, { method = 'GET', headers = {}, body, from = '127.0.0.1', token }: Call = {}): Promise<Answer> {
  const url = new URL(path, baseUrl);
  const all = { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) };
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: all, localAddress: from, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text === '' ? undefined : JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function budget(answer: Answer): { limit: number; remaining: number; reset: number } {
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
    expect(answer.headers[name], `${name} on ${answer.status}`).toMatch(/^\d+$/);
  }
  return {
    limit: Number(answer.headers['ratelimit-limit']),
    remaining: Number(answer.headers['ratelimit-remaining']),
    reset: Number(answer.headers['ratelimit-reset']),
  };
}

/** A 429 problem with Retry-After and the budget's headers (remaining 0). */
function expectRateLimited(answer: Answer, limit: number, windowSeconds: number): void {
  expect(answer.status, answer.text).toBe(429);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(answer.body).toEqual({
    type: 'urn:experimentation:problem:rate-limited',
    title: 'Too Many Requests',
    status: 429,
    detail: expect.stringMatching(/requests of the current .*; retry in \d+ s\.$/),
  });
  const retryAfter = Number(answer.headers['retry-after']);
  expect(answer.headers['retry-after']).toMatch(/^\d+$/);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
  const { limit: sent, remaining, reset } = budget(answer);
  expect(sent).toBe(limit);
  expect(remaining).toBe(0);
  expect(reset).toBeLessThanOrEqual(windowSeconds);
}

const forged = () => 'est_' + randomBytes(32).toString('base64url');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('rate limits as the contract documents them', () => {
  const spec = JSON.parse(readFileSync(fileURLToPath(new URL('../../generated/openapi.json', import.meta.url)), 'utf8')) as {
    info: { description: string };
    paths: Record<string, Record<string, { responses?: Record<string, { $ref?: string }> }>>;
    components: { responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, unknown> }> };
  };
  const responseOf = (ref: { $ref?: string }) => (ref.$ref ? spec.components.responses[ref.$ref.split('/').pop() ?? ''] : (ref as never));
  const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([, operation]) => operation.responses !== undefined)
      .map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, responses: operation.responses ?? {} })),
  );

  it('when every operation is looked at, then each documents 429 as a problem with Retry-After and the RateLimit-* headers', () => {
    expect(operations.length).toBeGreaterThan(30);
    for (const operation of operations) {
      expect(Object.keys(operation.responses), operation.name).toContain('429');
      const response = responseOf(operation.responses['429']);
      expect(Object.keys(response.headers ?? {}), operation.name).toEqual(
        expect.arrayContaining(['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
      );
      expect(Object.keys(response.content ?? {}), operation.name).toEqual(['application/problem+json']);
    }
  });

  it('when the document is read, then it says every answer carries the RateLimit-* headers (each response declares them: test/contract/document.test.ts)', () => {
    expect(spec.info.description).toMatch(/`RateLimit-Limit`,\s+`RateLimit-Remaining`\s+and\s+`RateLimit-Reset`\s+tell\s+the\s+budget\s+on\s+every\s+answer/);
  });
});

describe.each(engines)('rate limits on %s', (engine) => {
  const server = useServer(engine);
  const limits: RateLimitSettings = { enabled: true, windowSeconds: 60, perCredential: 5, perAddress: 4 };
  const app = useServer(() => ({ beside: server(), app: { rateLimit: limits } }));
  let team: TestTeam;
  let other: TestTeam;

  beforeAll(async () => {
    team = await server().newTeam();
    other = await server().newTeam();
  });

  it('when a credential calls, then its first request counts against the address and the next against its own budget, Remaining going down on 2xx and 4xx', async () => {
    const caller = await server().newTeam();
    const from = '127.0.0.10';
    const first = await call(app().baseUrl, '/api/user', { token: caller.token, from });
    expect(first.status).toBe(200);
    expect(budget(first)).toMatchObject({ limit: limits.perAddress, remaining: limits.perAddress - 1 });

    const answers = [
      await call(app().baseUrl, '/api/user', { token: caller.token, from }),
      await call(app().baseUrl, `/api/teams/${caller.id}/events?colour=green`, { token: caller.token, from }),
      await call(app().baseUrl, '/api/teams/999999999', { token: caller.token, from }),
      await call(app().baseUrl, '/api/user', { token: caller.token, from, method: 'PATCH' }),
      await call(app().baseUrl, '/api/nothing-here', { token: caller.token, from }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 400, 404, 405, 404]);
    expect(answers.map((answer) => budget(answer).limit)).toEqual(Array(5).fill(limits.perCredential));
    expect(answers.map((answer) => budget(answer).remaining)).toEqual([4, 3, 2, 1, 0]);
    for (const answer of answers) {
      expect(budget(answer).reset).toBeGreaterThan(0);
      expect(budget(answer).reset).toBeLessThanOrEqual(limits.windowSeconds);
    }
  });

  it('when a credential has used its budget, then 429 problem, and the create that was over budget created nothing', async () => {
    const from = '127.0.0.11';
    expect((await call(app().baseUrl, '/api/user', { token: team.token, from })).status).toBe(200); // counted against the address
    const create = (key: string) =>
      call(app().baseUrl, `/api/teams/${team.id}/events`, {
        method: 'POST',
        token: team.token,
        from,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
    for (let i = 1; i <= limits.perCredential; i++) {
      const answer = await create(`within_${i}`);
      expect(answer.status, answer.text).toBe(200);
      expect(budget(answer).remaining).toBe(limits.perCredential - i);
    }

    const over = await create('over_budget');
    expectRateLimited(over, limits.perCredential, limits.windowSeconds);
    expect((over.body as { detail: string }).detail).toMatch(/^This credential has used its 5 requests of the current minute/);

    // Nothing runs before the count: not the body parser, the routing or the validator.
    const malformed = await call(app().baseUrl, `/api/teams/${team.id}/events`, { method: 'POST', token: team.token, from, headers: { 'content-type': 'application/json' }, body: '{"key":' });
    expectRateLimited(malformed, limits.perCredential, limits.windowSeconds);
    expectRateLimited(await call(app().baseUrl, '/api/nothing-here', { token: team.token, from }), limits.perCredential, limits.windowSeconds);
    expectRateLimited(await call(app().baseUrl, '/api/user', { token: team.token, from, method: 'PATCH' }), limits.perCredential, limits.windowSeconds);

    // The budgets are this process's: the test's own server (another process, as far as budgets go) still answers.
    const path = { team: team.id };
    expect((await team.api.GET('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'over_budget' } } })).response.status).toBe(404);
    expect((await team.api.GET('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: `within_${limits.perCredential}` } } })).response.status).toBe(
      200,
    );
  });

  it('when one credential is over budget, then another token and the same team’s ingest key still work, on budgets of their own', async () => {
    const from = '127.0.0.12';
    expect((await call(app().baseUrl, '/api/user', { token: team.token, from })).status).toBe(429);

    const ingest = [
      await call(app().baseUrl, `/api/teams/${team.id}/config`, { token: team.ingestKey, from }),
      await call(app().baseUrl, `/api/teams/${team.id}/config`, { token: team.ingestKey, from }),
    ];
    expect(ingest.map((answer) => answer.status)).toEqual([200, 200]);
    expect(budget(ingest[1])).toMatchObject({ limit: limits.perCredential, remaining: limits.perCredential - 1 });

    const another = [await call(app().baseUrl, '/api/user', { token: other.token, from }), await call(app().baseUrl, '/api/user', { token: other.token, from })];
    expect(another.map((answer) => answer.status)).toEqual([200, 200]);
    expect(budget(another[1])).toMatchObject({ limit: limits.perCredential, remaining: limits.perCredential - 1 });
  });

  it('when calls come without a credential, then they count per client address: one address at 429 leaves another and credentials alone', async () => {
    const from = '127.0.0.20';
    for (let i = 1; i <= limits.perAddress; i++) {
      const answer = await call(app().baseUrl, '/api/health', { from });
      expect(answer.status).toBe(200);
      expect(budget(answer)).toMatchObject({ limit: limits.perAddress, remaining: limits.perAddress - i });
    }
    const over = await call(app().baseUrl, '/api/health', { from });
    expectRateLimited(over, limits.perAddress, limits.windowSeconds);
    expect((over.body as { detail: string }).detail).toMatch(/^This client address/);

    const elsewhere = await call(app().baseUrl, '/api/health', { from: '127.0.0.21' });
    expect(elsewhere.status).toBe(200);
    expect(budget(elsewhere)).toMatchObject({ limit: limits.perAddress, remaining: limits.perAddress - 1 });

    // A credential already seen to authenticate has its own budget, from any address.
    const known = await call(app().baseUrl, `/api/teams/${other.id}/config`, { token: other.ingestKey, from: '127.0.0.22' });
    expect(known.status).toBe(200);
    const withCredential = await call(app().baseUrl, `/api/teams/${other.id}/config`, { token: other.ingestKey, from });
    expect(withCredential.status).toBe(200);
    expect(budget(withCredential).limit).toBe(limits.perCredential);
  });

  it('when credentials are invalid (unknown, forged or malformed), then they count against the address, and 429 once it is used up', async () => {
    const from = '127.0.0.30';
    const answers = [
      await call(app().baseUrl, '/api/user', { token: forged(), from }),
      await call(app().baseUrl, '/api/user', { token: forged(), from }),
      await call(app().baseUrl, '/api/user', { headers: { authorization: 'Basic dXNlcjpwYXNz' }, from }),
      await call(app().baseUrl, '/api/health', { token: forged(), from }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([401, 401, 401, 401]);
    expect(answers.map((answer) => budget(answer))).toEqual(
      [3, 2, 1, 0].map((remaining) => ({ limit: limits.perAddress, remaining, reset: expect.any(Number) })),
    );

    // Another made-up credential gets no budget of its own: 429, not 401 — no lookup is made.
    expectRateLimited(await call(app().baseUrl, '/api/user', { token: forged(), from }), limits.perAddress, limits.windowSeconds);
    expectRateLimited(await call(app().baseUrl, '/api/health', { from }), limits.perAddress, limits.windowSeconds);

    // A valid credential this process has not yet seen authenticate is judged by its address too …
    const fresh = await server().newTeam();
    expectRateLimited(await call(app().baseUrl, '/api/user', { token: fresh.token, from }), limits.perAddress, limits.windowSeconds);
    // … until it has authenticated once (from elsewhere); then it has its own budget everywhere.
    expect((await call(app().baseUrl, '/api/user', { token: fresh.token, from: '127.0.0.31' })).status).toBe(200);
    const own = await call(app().baseUrl, '/api/user', { token: fresh.token, from });
    expect(own.status).toBe(200);
    expect(budget(own)).toMatchObject({ limit: limits.perCredential, remaining: limits.perCredential - 1 });
  });
});

describe.each(engines)('rate limit windows and switches on %s', (engine) => {
  const server = useServer(engine);
  // Short, but long enough that a busy machine's pauses do not split the first calls across two windows.
  const shortSettings: RateLimitSettings = { enabled: true, windowSeconds: 4, perCredential: 2, perAddress: 2 };
  const shortWindow = useServer(() => ({ beside: server(), app: { rateLimit: shortSettings } }));
  const disabled = useServer(() => ({ beside: server(), app: { rateLimit: { ...shortSettings, enabled: false } } }));
  const behindProxy = useServer(() => ({ beside: server(), app: { rateLimit: { ...shortSettings, windowSeconds: 60 }, trustProxy: 'loopback' } }));
  const notBehindProxy = useServer(() => ({ beside: server(), app: { rateLimit: { ...shortSettings, windowSeconds: 60 } } }));

  it('when the window ends, then the budget is full again', async () => {
    const team = await server().newTeam();
    const from = '127.0.0.40';
    expect((await call(shortWindow().baseUrl, '/api/user', { token: team.token, from })).status).toBe(200); // counted against the address
    expect((await call(shortWindow().baseUrl, '/api/user', { token: team.token, from })).status).toBe(200);
    expect((await call(shortWindow().baseUrl, '/api/user', { token: team.token, from })).status).toBe(200);
    const over = await call(shortWindow().baseUrl, '/api/user', { token: team.token, from });
    expectRateLimited(over, shortSettings.perCredential, shortSettings.windowSeconds);

    expect((await call(shortWindow().baseUrl, '/api/health', { from: '127.0.0.41' })).status).toBe(200);
    expect((await call(shortWindow().baseUrl, '/api/health', { from: '127.0.0.41' })).status).toBe(200);
    expectRateLimited(await call(shortWindow().baseUrl, '/api/health', { from: '127.0.0.41' }), shortSettings.perAddress, shortSettings.windowSeconds);

    await sleep(shortSettings.windowSeconds * 1000 + 100);
    const again = await call(shortWindow().baseUrl, '/api/user', { token: team.token, from });
    expect(again.status).toBe(200);
    expect(budget(again)).toMatchObject({ limit: shortSettings.perCredential, remaining: shortSettings.perCredential - 1 });
    const health = await call(shortWindow().baseUrl, '/api/health', { from: '127.0.0.41' });
    expect(health.status).toBe(200);
    expect(budget(health)).toMatchObject({ limit: shortSettings.perAddress, remaining: shortSettings.perAddress - 1 });
  });

  it('when rate limiting is disabled, then there is no 429 and no RateLimit-* header', async () => {
    const team = await server().newTeam();
    const answers = [];
    for (let i = 0; i < 5; i++) {
      answers.push(await call(disabled().baseUrl, '/api/health', { from: '127.0.0.42' }));
      answers.push(await call(disabled().baseUrl, '/api/user', { token: team.token, from: '127.0.0.42' }));
      answers.push(await call(disabled().baseUrl, '/api/user', { token: forged(), from: '127.0.0.42' }));
    }
    expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200, 401]));
    for (const answer of answers) {
      expect(answer.headers['ratelimit-limit']).toBeUndefined();
      expect(answer.headers['retry-after']).toBeUndefined();
    }
  });

  it('when TRUST_PROXY names the proxy, then X-Forwarded-For tells the addresses apart; when it does not, X-Forwarded-For is ignored', async () => {
    const viaProxy = (address: string) => call(behindProxy().baseUrl, '/api/health', { headers: { 'x-forwarded-for': address }, from: '127.0.0.50' });
    expect((await viaProxy('203.0.113.7')).status).toBe(200);
    expect((await viaProxy('203.0.113.7')).status).toBe(200);
    expect((await viaProxy('203.0.113.7')).status).toBe(429);
    expect((await viaProxy('203.0.113.8')).status).toBe(200);

    const spoofing = (address: string) => call(notBehindProxy().baseUrl, '/api/health', { headers: { 'x-forwarded-for': address }, from: '127.0.0.51' });
    expect((await spoofing('203.0.113.7')).status).toBe(200);
    expect((await spoofing('203.0.113.8')).status).toBe(200);
    expect((await spoofing('203.0.113.9')).status).toBe(429);
  });

  it('when a path is outside /api, then it is not counted and has no RateLimit-* header', async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await call(shortWindow().baseUrl, '/openapi.json', { from: '127.0.0.43' });
      expect(answer.status).toBe(200);
      expect(answer.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('the rate limiter’s memory (RATE_LIMIT_KEYS)', () => {
  const server = useServer('sqlite');
  // A flood of addresses or credentials cannot grow the process: past `keys` the oldest are forgotten.
  const bounded: RateLimitSettings = { enabled: true, windowSeconds: 3600, perCredential: 50, perAddress: 5, keys: 3 };
  const app = useServer(() => ({ beside: server(), app: { rateLimit: bounded, trustProxy: 'loopback' } }));
  const from = (address: string) => ({ headers: { 'x-forwarded-for': address }, from: '127.0.0.60' });

  it('when more addresses call in a window than it counts, then the address counted first is forgotten and its budget starts again', async () => {
    expect(budget(await call(app().baseUrl, '/api/health', from('198.51.100.1'))).remaining).toBe(4);
    expect(budget(await call(app().baseUrl, '/api/health', from('198.51.100.1'))).remaining).toBe(3);
    // Two more fit beside it: it is still counted.
    for (const address of ['198.51.100.2', '198.51.100.3']) await call(app().baseUrl, '/api/health', from(address));
    expect(budget(await call(app().baseUrl, '/api/health', from('198.51.100.1'))).remaining).toBe(2);

    for (const address of ['198.51.100.4', '198.51.100.5', '198.51.100.6']) await call(app().baseUrl, '/api/health', from(address));

    expect(budget(await call(app().baseUrl, '/api/health', from('198.51.100.1'))).remaining).toBe(4);
  });

  it('when more credentials authenticate than it remembers, then the first is forgotten and counts against its address again', async () => {
    const teams = await Promise.all(Array.from({ length: 7 }, () => server().newTeam()));
    const [first, ...others] = teams;
    const at = from('198.51.100.20');
    await call(app().baseUrl, '/api/user', { token: first!.token, ...at });
    expect(budget(await call(app().baseUrl, '/api/user', { token: first!.token, ...at })).limit).toBe(bounded.perCredential);

    for (const [i, team] of others.entries()) expect((await call(app().baseUrl, '/api/user', { token: team.token, ...from(`198.51.100.${30 + i}`) })).status).toBe(200);

    expect(budget(await call(app().baseUrl, '/api/user', { token: first!.token, ...at })).limit).toBe(bounded.perAddress);
  });
});
