import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

/**
 * CORS: `Access-Control-Allow-Origin: *` on every answer, errors included; a preflight (OPTIONS
 * with Origin and Access-Control-Request-Method) on a path of the contract is 204 with that
 * path's methods; a plain OPTIONS stays 405 with Allow.
 */

const spec = JSON.parse(readFileSync(fileURLToPath(new URL('../../generated/openapi.json', import.meta.url)), 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
};
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const methodsOf = (template: string) =>
  Object.keys(spec.paths[template])
    .filter((key) => HTTP_METHODS.includes(key))
    .map((method) => method.toUpperCase())
    .sort();
const listed = (header: string | null) =>
  (header ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .sort();

const ORIGIN = 'https://app.example.com';

describe.each(engines)('CORS on %s', (engine) => {
  const server = useServer(engine);
  // An app with a budget of one request per address, for a 429.
  const limitedApp = useServer(() => ({ beside: server(), app: { rateLimit: { enabled: true, windowSeconds: 60, perCredential: 1, perAddress: 1 } } }));
  let team: TestTeam;

  beforeAll(async () => {
    team = await server().newTeam();
  });

  function send(path: string, init: RequestInit & { token?: string | null } = {}, baseUrl = server().baseUrl) {
    const { token = team.token, headers, ...rest } = init;
    return fetch(baseUrl + path, {
      ...rest,
      headers: { origin: ORIGIN, ...(token ? { authorization: `Bearer ${token}` } : {}), ...(headers as Record<string, string>) },
    });
  }

  it.each([
    ['200', 200, () => send('/api/user')],
    ['200 without a credential', 200, () => send('/api/health', { token: null })],
    ['400', 400, () => send(`/api/teams/${team.id}/events?colour=green`)],
    ['401', 401, () => send('/api/user', { token: 'est_unknown' })],
    ['403', 403, () => send('/api/user', { token: team.ingestKey })],
    ['404 of an unknown path', 404, () => send('/api/nothing-here')],
    ['404 of an unknown resource', 404, () => send(`/api/teams/${team.id}/events/absent`)],
    ['404 outside /api', 404, () => send('/nothing-here')],
    ['405', 405, () => send('/api/user', { method: 'PATCH' })],
    ['415', 415, () => send(`/api/teams/${team.id}/events`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })],
    ['the contract', 200, () => send('/openapi.json', { token: null })],
  ])('when the answer is %s, then Access-Control-Allow-Origin is * and the rate-limit headers and ETag are exposed', async (_name, status, request) => {
    const response = await request();
    await response.arrayBuffer();
    expect(response.status).toBe(status);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    expect(listed(response.headers.get('access-control-expose-headers'))).toEqual(
      ['ETag', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'].sort(),
    );
  });

  it('when the answer is 429, then Access-Control-Allow-Origin is * too', async () => {
    const first = await send('/api/health', { token: null }, limitedApp().baseUrl);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    const over = await send('/api/health', { token: null }, limitedApp().baseUrl);
    expect(over.status).toBe(429);
    expect(over.headers.get('access-control-allow-origin')).toBe('*');
    expect(await over.json()).toMatchObject({ status: 429 });
  });

  it.each(Object.keys(spec.paths))('when a browser preflights %s, then 204 with exactly its methods, the allowed headers and a max age', async (template) => {
    const path = template.replace(/\{[^}]+\}/g, (name) => (name === '{team}' ? String(team.id) : 'some_key'));
    const method = methodsOf(template).find((m) => m !== 'GET') ?? 'GET';
    const response = await send(path, {
      method: 'OPTIONS',
      token: null, // browsers never send credentials on a preflight
      headers: { 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(listed(response.headers.get('access-control-allow-methods'))).toEqual(methodsOf(template));
    expect(response.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type, If-None-Match, Last-Event-ID, X-API-Key');
    expect(Number(response.headers.get('access-control-max-age'))).toBeGreaterThan(0);
  });

  it('when a preflight asks for a method the path lacks, then 204 with the methods it has (the browser refuses)', async () => {
    const response = await send(`/api/teams/${team.id}/events/purchase`, { method: 'OPTIONS', token: null, headers: { 'access-control-request-method': 'PATCH' } });
    expect(response.status).toBe(204);
    expect(listed(response.headers.get('access-control-allow-methods'))).toEqual(['DELETE', 'GET', 'PUT']);
  });

  it('when preflights exceed the rate-limit budget, then they are still answered 204 and use none of it', async () => {
    const limited = (path: string, init: RequestInit & { token?: string | null }) => send(path, init, limitedApp().baseUrl);
    for (let i = 0; i < 3; i++) {
      const response = await limited(`/api/teams/${team.id}/events`, { method: 'OPTIONS', token: null, headers: { 'access-control-request-method': 'POST' } });
      expect(response.status).toBe(204);
      expect(response.headers.get('ratelimit-remaining')).toBeNull();
    }
  });

  it('when a preflight names an unknown path, then 404 problem with Access-Control-Allow-Origin', async () => {
    const response = await send('/api/nothing-here', { method: 'OPTIONS', token: null, headers: { 'access-control-request-method': 'GET' } });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-methods')).toBeNull();
  });

  it.each([
    ['without Origin', {}],
    ['with Origin but no Access-Control-Request-Method', { origin: ORIGIN }],
  ])('when a plain OPTIONS is sent %s, then 405 with Allow, no preflight headers', async (_name, headers) => {
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/events`, { method: 'OPTIONS', headers });
    expect(response.status).toBe(405);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(listed(response.headers.get('allow'))).toEqual(['GET', 'POST']);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-methods')).toBeNull();
    expect(response.headers.get('access-control-allow-headers')).toBeNull();
    expect(response.headers.get('access-control-max-age')).toBeNull();
    expect(await response.json()).toMatchObject({ status: 405 });
  });
});
