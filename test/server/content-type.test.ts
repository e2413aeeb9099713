// Content-Type cannot grow the process: the validator compiles and keeps a validator per route
// and distinct media type, so a stream of made-up media types — no credential needed on the
// health check — would add an entry per request. Only JSON media types may reach it.
import { Agent, request } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../support/engines';
import { inParallel } from '../support/fixtures';
import type { TestTeam } from '../support/server';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const REQUESTS = 20_000;
// Budgets this run cannot use up (an attacker would spread it over minutes or addresses).
process.env.RATE_LIMIT_PER_ADDRESS ??= '1000000000';
process.env.RATE_LIMIT_PER_CREDENTIAL ??= '1000000000';

describe('distinct Content-Type values', () => {
  const server = useServer('sqlite');
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  let team: TestTeam;

  beforeAll(async () => {
    team = await server().newTeam();
  });

  function send(method: string, path: string, contentType: string, token?: string): Promise<number> {
    const url = new URL(server().baseUrl);
    const body = method === 'POST' ? '{"key":"x"}' : undefined;
    return new Promise((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, method, path, agent, headers: { 'content-type': contentType, ...(token && { authorization: `Bearer ${token}` }), ...(body && { 'content-length': body.length }) } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The n-th request: mostly the public health check, some creates with and without a credential. */
  function nth(n: number): Promise<[string, number]> {
    const type = `application/x-${n}`;
    if (n % 10 === 1) return send('POST', `/api/teams/${team.id}/events`, type, team.token).then((status) => ['POST with a token', status]);
    if (n % 10 === 2) return send('POST', `/api/teams/${team.id}/events`, `${type}; charset=utf-8`).then((status) => ['POST without a credential', status]);
    return send('GET', '/api/health', type).then((status) => ['GET /api/health', status]);
  }

  it(`when ${REQUESTS} requests each carry a new media type, then each is answered as documented and the heap does not grow`, async () => {
    await inParallel([...Array(500).keys()], 16, (n) => nth(REQUESTS + n)); // warm-up: first-time allocations
    collectGarbage();
    const before = process.memoryUsage().heapUsed;

    const answers = await inParallel([...Array(REQUESTS).keys()], 16, nth);

    collectGarbage();
    const grown = (process.memoryUsage().heapUsed - before) / 2 ** 20;
    const tally: Record<string, number> = {};
    for (const [what, status] of answers) tally[`${what} → ${status}`] = (tally[`${what} → ${status}`] ?? 0) + 1;
    console.log(`[content-type] ${REQUESTS} media types: ${JSON.stringify(tally)}; heap ${grown >= 0 ? '+' : ''}${grown.toFixed(1)} MiB`);
    expect(tally).toEqual({
      'GET /api/health → 200': REQUESTS * 0.8,
      'POST with a token → 415': REQUESTS * 0.1,
      'POST without a credential → 401': REQUESTS * 0.1,
    });
    expect(grown).toBeLessThan(4);
  });
});
