// `node --import tsx bench/webhooks.ts [--rounds 5] [--seconds 2] [--concurrency 4] [--changes 1000]
// [--failing-seconds 60] [--engines sqlite,postgres]`: what webhooks cost (issue #41). A real server
// per engine (a process of its own on scratch storage, WEBHOOK_ALLOW_PRIVATE_ADDRESSES so endpoints
// may point at a receiver on 127.0.0.1, and the shortened retries below), and in the same run:
// (a) flag updates (PUT …/features/f) per second on a team with one endpoint wanting flag.* at a
//     receiver answering 200, against a twin team with none — rounds alternating; the worker
//     delivers while the updates run, and each round waits for the queue to drain before the next
//     (the drain is not timed). Target: with / without ≤ 1.3 in cost (without's rate / with's).
// (b) ingest (POST …/ingest, a fresh participant each) per second on the same two teams; ingest
//     writes no audit entries, so the ratio should be ≈ 1.
// (c) `changes` flag updates on a third team whose endpoint's receiver answers 500 from the first
//     update until `failing-seconds` after it, then 200: checks that every change's message
//     arrived (the team's audit log, paged, against the webhook-ids), in order (every request,
//     failed ones included, carries a webhook-id no lower than the one before), duplicates only
//     as the same webhook-id with the same bytes, and times the drain from the recovery to the
//     last message. Prints the figures and writes bench/results/<day>-webhooks.json.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startReceiver, type Receiver } from '../test/support/webhooks';
import { closeAll, startRealServer } from './lib/environment';
import type { Engine } from './lib/options';
import { bearer, createBenchTeam, freshIngestBody, type BenchTeam } from './lib/setup';
import { spread } from './lib/stats';
import { postgresAnswers, scratchStorage } from './lib/storage';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '4' },
    changes: { type: 'string', default: '1000' },
    'failing-seconds': { type: 'string', default: '60' },
    engines: { type: 'string', default: 'sqlite,postgres' },
  },
});
const [rounds, seconds, concurrency, changes, failingSeconds] = [values.rounds, values.seconds, values.concurrency, values.changes, values['failing-seconds']].map(Number) as [number, number, number, number, number];
const engines = values.engines.split(',') as Engine[];

/** Retries after 0.2 s doubling to at most 2 s (instead of 5 s to 1 h), looked for every 0.1 s (instead of 1 s). */
const DELIVERY = { WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true', WEBHOOK_TIMEOUT_SECONDS: '5', WEBHOOK_RETRY_BASE_SECONDS: '0.2', WEBHOOK_RETRY_MAX_SECONDS: '2', WEBHOOK_POLL_SECONDS: '0.1' };

const round3 = (n: number) => Math.round(n * 1000) / 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs / 1000} s: ${what}`);
    await sleep(20);
  }
}

async function measure(engine: Engine) {
  const scratch = await scratchStorage(engine);
  const server = await startRealServer(`webhooks-${engine}`, scratch, { cpuProf: false, env: DELIVERY });
  const receiver = await startReceiver();
  const failing = await startReceiver();
  try {
    const call = async (team: BenchTeam, method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}/api/teams/${team.id}${path}`, { method, headers: { ...bearer(team.token), 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${text}`);
      return JSON.parse(text) as unknown;
    };
    const arrange = async (url: string | null) => {
      const team = await createBenchTeam(server.url, scratch);
      await call(team, 'POST', '/features', { key: 'f', type: 'string', enabled: true, value: 'v0' });
      if (url) await call(team, 'POST', '/webhooks', { key: 'changes', url, event_types: ['flag.*'] });
      return team;
    };
    const without = await arrange(null);
    const withOne = await arrange(receiver.url);

    // (a) and (b)
    let updates = 0;
    const contenders = {
      'flag update, no endpoint': (signal: number) => call(without, 'PUT', '/features/f', { value: `v${signal}` }),
      'flag update, one endpoint': (signal: number) => call(withOne, 'PUT', '/features/f', { value: `v${signal}` }).then(() => updates++),
      'ingest, no endpoint': () => ingest(without),
      'ingest, one endpoint': () => ingest(withOne),
    };
    async function ingest(team: BenchTeam) {
      const response = await fetch(server.url + team.paths.ingest, { method: 'POST', headers: { ...bearer(team.ingestKey), 'content-type': 'application/json' }, body: freshIngestBody() });
      await response.arrayBuffer();
      if (response.status >= 300) throw new Error(`ingest answered ${response.status}`);
    }
    const drained = () => until('the endpoint caught up', () => new Set(receiver.ids()).size >= updates, 120_000);
    async function rate(name: keyof typeof contenders, forSeconds: number): Promise<number> {
      let done = 0;
      const started = performance.now();
      const deadline = started + forSeconds * 1000;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < deadline) await contenders[name](++done);
        }),
      );
      const perSecond = done / ((performance.now() - started) / 1000);
      await drained();
      return perSecond;
    }
    for (const name of Object.keys(contenders) as (keyof typeof contenders)[]) await rate(name, seconds / 2); // warm up
    const rates: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
    const updateCost: number[] = [];
    const ingestRatio: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const measured: Record<string, number> = {};
      for (const pair of [['flag update, no endpoint', 'flag update, one endpoint'], ['ingest, no endpoint', 'ingest, one endpoint']] as const) {
        const order = round % 2 === 0 ? pair : ([pair[1], pair[0]] as const);
        for (const name of order) rates[name]!.push((measured[name] = await rate(name, seconds)));
      }
      updateCost.push(measured['flag update, no endpoint']! / measured['flag update, one endpoint']!);
      ingestRatio.push(measured['ingest, one endpoint']! / measured['ingest, no endpoint']!);
    }
    const duplicatesInA = receiver.ids().length - new Set(receiver.ids()).size;

    // (c)
    const outage = await arrange(failing.url);
    let recoversAt = Infinity;
    failing.answer = (request) => (request.at < recoversAt ? 500 : 200);
    const firstChange = Date.now();
    recoversAt = firstChange + failingSeconds * 1000;
    for (let i = 1; i <= changes; i++) await call(outage, 'PUT', '/features/f', { value: `c${i}` });
    const changesTookMs = Date.now() - firstChange;
    const wanted = await updateEntryIds(outage);
    if (wanted.length !== changes) throw new Error(`the audit log holds ${wanted.length} flag updates, not ${changes}`);
    const wantedIds = new Set(wanted);
    const deliveredIds = () => new Set(failing.received.filter((request) => request.at >= recoversAt).map((request) => String(request.headers['webhook-id'])));
    await until(`${changes} messages delivered after the recovery`, () => [...wantedIds].every((id) => deliveredIds().has(id)), 600_000);
    const lastArrival = Math.max(...failing.received.filter((request) => wantedIds.has(String(request.headers['webhook-id']))).map((request) => request.at));
    return { ...verdict(failing, wanted, recoversAt), changesTookMs, drainMs: lastArrival - recoversAt, rates, updateCost, ingestRatio, duplicatesInA };
  } finally {
    await receiver.close();
    await failing.close();
    await closeAll();
    await scratch.drop();
  }

  /** The webhook-ids of the team's flag updates, oldest first, from its audit log paged by cursor. */
  async function updateEntryIds(team: BenchTeam): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const query = new URLSearchParams({ resource_type: 'flag', limit: '100', ...(cursor ? { cursor } : {}) });
      const response = await fetch(`${server.url}/api/teams/${team.id}/audit-log?${query}`, { headers: bearer(team.token) });
      const page = (await response.json()) as { data: { id: number | string; action: string }[]; meta: { next_cursor?: string | null } };
      ids.push(...page.data.filter((entry) => entry.action === 'updated').map((entry) => `msg_${entry.id}`));
      cursor = page.meta.next_cursor ?? undefined;
    } while (cursor);
    return ids.reverse();
  }
}

/** What the failing receiver saw, against the messages wanted (oldest first). */
function verdict(failing: Receiver, wanted: string[], recoversAt: number) {
  const order = new Map(wanted.map((id, index) => [id, index]));
  const requests = failing.received.filter((request) => order.has(String(request.headers['webhook-id'])));
  const bodies = new Map<string, string>();
  let inOrder = true;
  let sameBytes = true;
  let previous = -1;
  for (const request of requests) {
    const id = String(request.headers['webhook-id']);
    const index = order.get(id)!;
    if (index < previous) inOrder = false;
    previous = index;
    if (bodies.has(id) && bodies.get(id) !== request.body) sameBytes = false;
    bodies.set(id, request.body);
  }
  const succeeded = requests.filter((request) => request.at >= recoversAt);
  return {
    arrived: bodies.size,
    lost: wanted.filter((id) => !bodies.has(id)).length,
    unexpected: failing.received.length - requests.length,
    inOrder,
    duplicatesSameBytes: sameBytes,
    requests: requests.length,
    answered500: requests.length - succeeded.length,
    deliveredMoreThanOnce: succeeded.length - new Set(succeeded.map((request) => String(request.headers['webhook-id']))).size,
  };
}

const results: Record<string, unknown> = {
  date: new Date().toISOString(),
  rounds,
  seconds,
  concurrency,
  changes,
  'failing seconds': failingSeconds,
  delivery: DELIVERY,
  target: 'flag update with one endpoint ≤ 1.3 × the cost without; ingest ≈ 1; every message arrives, in order, none lost',
};
for (const engine of engines) {
  if (engine === 'postgres' && !(await postgresAnswers())) continue;
  const m = await measure(engine);
  results[engine] = {
    'requests per second': Object.fromEntries(Object.entries(m.rates).map(([name, list]) => [name, Object.fromEntries(Object.entries(spread(list)).map(([k, v]) => [k, Math.round(v)]))])),
    'flag update cost, one endpoint / none, per round': m.updateCost.map(round3),
    'flag update cost, one endpoint / none, median': round3(spread(m.updateCost).median),
    'ingest rate, one endpoint / none, per round': m.ingestRatio.map(round3),
    'ingest rate, one endpoint / none, median': round3(spread(m.ingestRatio).median),
    'webhook-ids received more than once while measuring': m.duplicatesInA,
    outage: {
      'changes made, s': round3(m.changesTookMs / 1000),
      arrived: m.arrived,
      lost: m.lost,
      'requests for other messages': m.unexpected,
      'in order': m.inOrder,
      'repeats carry the same webhook-id and bytes': m.duplicatesSameBytes,
      'requests in all': m.requests,
      'answered 500': m.answered500,
      'delivered (200) more than once': m.deliveredMoreThanOnce,
      'drain after the recovery, s': round3(m.drainMs / 1000),
    },
  };
  console.error(`webhooks: ${engine} done`);
}
console.log(JSON.stringify(results, null, 2));
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-webhooks.json`, JSON.stringify(results, null, 2) + '\n');
