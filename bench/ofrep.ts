// `node --import tsx bench/ofrep.ts [--rounds 7] [--seconds 2] [--concurrency 8]`: OFREP's bulk
// evaluation of 50 flags for one context (POST …/ofrep/v1/evaluate/flags, no If-None-Match: a full
// 200 each time) against GET …/config (no If-None-Match: the full config) on the same team of the
// same real server (a process of its own on scratch SQLite), rounds alternating. Target (issue
// #43): bulk ≥ 0.5 × the config's rate. The 50 flags: a force rule on two conditions, a rollout on
// a third; every tenth also an experiment rule of one of 3 running experiments. Each contender keeps
// `concurrency` requests in flight with the team's ingest key. Prints the figures and writes
// bench/results/<day>-ofrep.json.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createTeam } from '../server/admin/service';
import { openStorage } from '../server/storage/database';
import { closeAll, startRealServer } from './lib/environment';
import { spread } from './lib/stats';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, seconds: { type: 'string', default: '2' }, concurrency: { type: 'string', default: '8' } } });
const [rounds, seconds, concurrency] = [Number(values.rounds), Number(values.seconds), Number(values.concurrency)];

const scratch = await scratchStorage('sqlite');
const server = await startRealServer('server', scratch, { cpuProf: false });
const storage = await openStorage({ ...scratch.options, poolSize: 1 });
const created = await createTeam(storage.db, { name: 'ofrep bench', email: 'ofrep@bench.example' }).finally(() => storage.close());
const base = `${server.url}/api/teams/${created.team.id}`;
const api = (method: string, path: string, body?: unknown) =>
  fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${created.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (response) => {
    if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  });

const FLAGS = 50;
await api('POST', '/events', { key: 'purchase', type: 'count' });
for (let e = 0; e < 3; e++) {
  await api('POST', '/experiments', { key: `test_${e}`, event: 'purchase' });
  for (const variant of ['control', 'treatment']) await api('POST', `/experiments/test_${e}/variants`, { key: variant, control: variant === 'control' });
  await api('POST', `/experiments/test_${e}/start`);
}
for (let f = 0; f < FLAGS; f++) {
  const experimentRule = f % 10 === 0 ? [{ type: 'experiment', experiment: `test_${(f / 10) % 3}`, variants: { treatment: 'treated' } }] : [];
  const rules = [{ type: 'force', conditions: { country: 'CH', plan: 'pro' }, value: 'swiss' }, ...experimentRule, { type: 'rollout', conditions: { plan: { $ne: 'free' } }, percentage: 40, value: 'on' }];
  await api('POST', '/features', { key: `flag_${f}`, type: 'string', enabled: true, value: 'off', rules });
}

const headers = { authorization: `Bearer ${created.ingest_key}` };
const body = JSON.stringify({ context: { targetingKey: 'user-42', country: 'DE', plan: 'pro' } });
const contenders: Record<string, () => Promise<Response>> = {
  'GET …/config': () => fetch(`${base}/config`, { headers }),
  'OFREP bulk, 50 flags': () => fetch(`${base}/ofrep/v1/evaluate/flags`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body }),
};
const bulk = (await (await contenders['OFREP bulk, 50 flags']!()).json()) as { flags?: unknown[] };
if (bulk.flags?.length !== FLAGS) throw new Error(`the bulk evaluation answered ${JSON.stringify(bulk).slice(0, 300)}`);

async function rate(call: () => Promise<Response>, forSeconds: number): Promise<number> {
  let done = 0;
  const started = performance.now();
  const until = started + forSeconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const response = await call();
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`answered ${response.status}`);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}
for (const call of Object.values(contenders)) await rate(call, seconds / 2); // warm up
const rates = Object.fromEntries(Object.keys(contenders).map((name) => [name, [] as number[]]));
const ratios: number[] = [];
for (let round = 0; round < rounds; round++) {
  const measured: Record<string, number> = {};
  const order = round % 2 === 0 ? Object.entries(contenders) : Object.entries(contenders).reverse();
  for (const [name, call] of order) rates[name]!.push((measured[name] = await rate(call, seconds)));
  ratios.push(measured['OFREP bulk, 50 flags']! / measured['GET …/config']!);
}
await closeAll();

const results = {
  date: new Date().toISOString(),
  rounds,
  seconds,
  concurrency,
  'requests per second': Object.fromEntries(Object.entries(rates).map(([name, list]) => [name, spread(list)])),
  'bulk / config per round': ratios.map((ratio) => Math.round(ratio * 1000) / 1000),
  'bulk / config, median': spread(ratios).median,
  target: 0.5,
};
console.log(JSON.stringify(results, null, 2));
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-ofrep.json`, JSON.stringify(results, null, 2) + '\n');
