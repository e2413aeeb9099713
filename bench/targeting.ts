// `npx tsx bench/targeting.ts [--engine sqlite|postgres] [--rounds 5] [--batches 6]`: what targeting costs, old
// against new in one run. (1) Assignment, in process: the variant alone as before (the digest through node:crypto and
// through @noble/hashes, the two `#sha256` resolves to under Node and elsewhere) against a full targeted placement
// (conditions, group, coverage, variant). (2) Ingest through the real server: batches of 500 new participants
// with attributes into a team running 3 untargeted experiments (every ingest's work before targeting) against a
// team running 3 targeted ones that admit everyone (every check runs: the decision's own cost), and one whose 3
// targeted experiments admit some (a condition half the participants meet, 50 % coverage, thirds of one exclusion
// group: fewer rows written), rounds alternating.
// Prints a table and writes bench/results/<day>-targeting.json.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { sha256 as portableSha256 } from '@noble/hashes/sha2.js';
import { pino } from 'pino';
import { createTeam } from '../server/admin/service';
import { createApp } from '../server/app';
import { assignVariant, scaled } from '../domain/assignment';
import { placeParticipant } from '../domain/eligibility';
import { sha256 as nodeSha256 } from '../server/platform/sha256';
import { openStorage } from '../server/storage/database';
import type { Engine } from './lib/options';
import { spread } from './lib/stats';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({
  options: { engine: { type: 'string', default: 'sqlite' }, rounds: { type: 'string', default: '5' }, batches: { type: 'string', default: '6' } },
});
const rounds = Number(values.rounds);
const SEED = '3b9e2f70c41d58a6e0f9d2c7b1a84e63';
const VARIANTS = [{ traffic: 50 }, { traffic: 50 }];
const keys = Array.from({ length: 200_000 }, (_, i) => `user-${i}`);

/** Calls per second of `work` over the keys. */
function rate(work: (key: string) => unknown): number {
  const started = performance.now();
  for (const key of keys) work(key);
  return keys.length / ((performance.now() - started) / 1000);
}

const encoder = new TextEncoder();
const assignment = {
  'variant only, node:crypto': (key: string) => assignVariant(SEED, key, VARIANTS, 2),
  'variant only, @noble/hashes': (key: string) => scaled(portableSha256(encoder.encode(`${SEED}:${key}`)), 0, 10_000),
  'digest only, node:crypto': (key: string) => nodeSha256(`${SEED}:${key}`),
  'targeted placement (condition, group, coverage, variant), node:crypto': (key: string) =>
    placeParticipant(
      { seed: SEED, hashVersion: 2, coverage: 5000, group: { key: 'checkout', start: 0, end: 3333 }, conditions: { country: { $in: ['DE', 'AT'] } } },
      { key, attributes: { country: 'DE' } },
      VARIANTS,
    ),
};
const assignmentRates = new Map<string, number[]>(Object.keys(assignment).map((name) => [name, []]));
for (const work of Object.values(assignment)) rate(work); // warm up the JIT
for (let round = 0; round < rounds; round++) for (const [name, work] of Object.entries(assignment)) assignmentRates.get(name)!.push(rate(work));

// Ingest through the real server.
const scratch = await scratchStorage(values.engine as Engine);
const storage = await openStorage(scratch.options);
const server = createApp({ storage, logger: pino({ level: 'silent' }), validateResponses: false }).listen(0, '127.0.0.1');
await once(server, 'listening');
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function call(token: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

async function teamWith(name: string, targeting: (i: number) => Record<string, unknown>) {
  const created = await createTeam(storage.db, { name, email: `${name}@bench.example` });
  const team = `/api/teams/${created.team.id}`;
  await call(created.token, 'POST', `${team}/events`, { key: 'purchase' });
  for (let i = 0; i < 3; i++) {
    await call(created.token, 'POST', `${team}/experiments`, { key: `experiment_${i}`, event: 'purchase', ...targeting(i) });
    await call(created.token, 'POST', `${team}/experiments/experiment_${i}/variants`, { key: 'control', control: true });
    await call(created.token, 'POST', `${team}/experiments/experiment_${i}/variants`, { key: 'treatment' });
    await call(created.token, 'POST', `${team}/experiments/experiment_${i}/start`);
  }
  return { path: `${team}/ingest/batch`, key: created.ingest_key };
}

const teams = {
  untargeted: await teamWith('untargeted', () => ({})),
  // Every check runs and passes, so both teams write the same rows: the difference is the decision's cost.
  'targeted, admitting everyone': await teamWith('everyone', (i) => ({
    conditions: { country: { $in: ['DE', 'US'] } },
    coverage: 100,
    exclusion_group: { key: `own_${i}`, start: 0, end: 100 },
  })),
  'targeted, admitting some': await teamWith('some', (i) => ({
    conditions: { country: { $in: ['DE', 'AT', 'CH', 'FR'] } },
    coverage: 50,
    exclusion_group: { key: 'checkout', start: [0, 33.33, 66.66][i], end: [33.33, 66.66, 100][i] },
  })),
};
const ingestRates = Object.fromEntries(Object.keys(teams).map((name) => [name, [] as number[]])) as Record<keyof typeof teams, number[]>;
let sent = 0;
async function ingestRound(team: { path: string; key: string }, batches: number): Promise<number> {
  const started = performance.now();
  for (let b = 0; b < batches; b++) {
    const items = Array.from({ length: 500 }, () => ({ participant: { key: `p-${sent++}`, attributes: { country: ['DE', 'US'][sent % 2]!, plan: 'pro' } }, event: 'purchase' }));
    await call(team.key, 'POST', team.path, { items });
  }
  return (batches * 500) / ((performance.now() - started) / 1000);
}
for (const team of Object.values(teams)) await ingestRound(team, 2); // warm up
for (let round = 0; round < rounds; round++) {
  for (const name of Object.keys(teams) as Array<keyof typeof teams>) ingestRates[name].push(await ingestRound(teams[name], Number(values.batches)));
}
server.close();
await storage.close();
await scratch.drop();

const results = {
  engine: values.engine,
  rounds,
  assignment: Object.fromEntries([...assignmentRates].map(([name, rates]) => [name, spread(rates)])),
  ingest: Object.fromEntries(Object.entries(ingestRates).map(([name, rates]) => [name, spread(rates)])),
};
const perSecond = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(`assignment (per second, median of ${rounds} rounds over ${keys.length.toLocaleString('en-US')} keys)`);
for (const [name, s] of Object.entries(results.assignment)) console.log(`  ${name.padEnd(72)} ${perSecond(s.median).padStart(12)}  (${(1e6 / s.median).toFixed(2)} µs)`);
console.log(`ingest on ${values.engine} (batch items per second, median of ${rounds} rounds of ${values.batches} × 500)`);
for (const [name, s] of Object.entries(results.ingest)) console.log(`  ${name.padEnd(72)} ${perSecond(s.median).padStart(12)}  [${perSecond(s.min)}–${perSecond(s.max)}]`);
for (const name of ['targeted, admitting everyone', 'targeted, admitting some']) {
  console.log(`  ${name} / untargeted: ${(results.ingest[name]!.median / results.ingest.untargeted!.median).toFixed(3)}`);
}
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-targeting-${values.engine}.json`, JSON.stringify(results, null, 2) + '\n');
