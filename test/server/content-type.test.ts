// Content-Type cannot grow the process: the validator compiles and keeps a validator per route
// and distinct media type, so a stream of made-up media types — no credential needed on the
// health check — would add an entry per request. Only JSON media types may reach it.
import { Agent, request } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../support/server';
import { inParallel } from '../support/fixtures';
import type { TestTeam } from '../support/team';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

// Each request carries a new media type. The heap is measured (after a full collection) after a
// warm-up — first-time allocations and bounded caches filling up, about 380 KiB over its first
// 1 000 requests — and after two rounds more: what a request keeps is the difference over their
// requests. With the guard removed, the validator kept about 58 KB a request; the budget is a
// fiftieth of that, and holds however fast the machine answers (20 000 requests took over
// 120 s on a loaded machine; these 4 000 take about 15 s here).
const ROUND = 1000;
const WARM_UP = 2000;
const KEPT_PER_REQUEST = 1024;
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

  it(`when rounds of ${ROUND} requests each carry a new media type, then each is answered as documented and a round keeps no memory`, async () => {
    // Arrange: the warm-up
    let next = 0;
    const round = (requests = ROUND) => inParallel([...Array(requests).keys()], 16, () => nth(next++));
    const heapAfterCollection = () => {
      collectGarbage();
      return process.memoryUsage().heapUsed;
    };
    await round(WARM_UP);
    const before = heapAfterCollection();

    // Act: two more rounds
    const answers = [...(await round()), ...(await round())];
    const kept = (heapAfterCollection() - before) / 2;

    // Assert
    const tally: Record<string, number> = {};
    for (const [what, status] of answers) tally[`${what} → ${status}`] = (tally[`${what} → ${status}`] ?? 0) + 1;
    console.log(`[content-type] ${2 * ROUND} new media types: ${JSON.stringify(tally)}; a round of ${ROUND} keeps ${(kept / 1024).toFixed(0)} KiB (${(kept / ROUND).toFixed(0)} bytes a request)`);
    expect(tally).toEqual({
      'GET /api/health → 200': 2 * ROUND * 0.8,
      'POST with a token → 415': 2 * ROUND * 0.1,
      'POST without a credential → 401': 2 * ROUND * 0.1,
    });
    expect(kept / ROUND).toBeLessThan(KEPT_PER_REQUEST);
  });
});
