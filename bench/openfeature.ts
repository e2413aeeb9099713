// `node --import tsx bench/openfeature.ts [--rounds 11] [--seconds 1]`: the package's OpenFeature
// server provider (generated/openfeature.js, as consumers get it) against the SDK's own feature()
// on the same config, in one process, in blocks of 1 000 decisions taking turns, each timed in the
// process's CPU time (so that other processes' load on a shared machine does not count) — what the
// wrapper adds to a decision.
// The real server, a process of its own on scratch SQLite, serves the config: a team with 3
// running experiments and 30 flags (a force rule on two conditions and a rollout on a third;
// every tenth also an experiment rule), 20 000 participants with attributes. Contenders:
// - feature(): the SDK's client (the one the provider runs on), as an application calls it;
// - resolveStringEvaluation(): the provider's, with the context OpenFeature passes it
//   (targetingKey and the attributes), which the provider reads back into a participant; its
//   promise awaited by the loop as feature()'s answer is (OpenFeature's SDK awaits it so), the
//   value read from the resolution;
// - getStringValue(): the same through @openfeature/server-sdk's client (its hooks and context
//   merging), for information.
// Exposures go to queues of 1 that drop them (their bookkeeping counts). Prints the figures and
// writes bench/results/<day>-openfeature.json.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { OpenFeature } from '@openfeature/server-sdk';
import { createTeam } from '../server/admin/service';
import { openStorage } from '../server/storage/database';
import { ExperimentationServerProvider } from '../generated/openfeature.js';
import { closeAll, startRealServer } from './lib/environment';
import { spread } from './lib/stats';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '11' }, seconds: { type: 'string', default: '1' } } });
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);

const scratch = await scratchStorage('sqlite');
const server = await startRealServer('server', scratch, { cpuProf: false });
const storage = await openStorage({ ...scratch.options, poolSize: 1 });
const created = await createTeam(storage.db, { name: 'openfeature bench', email: 'openfeature@bench.example' }).finally(() => storage.close());
const team = created.team.id;
const api = (method: string, path: string, body?: unknown) =>
  fetch(`${server.url}/api/teams/${team}${path}`, { method, headers: { authorization: `Bearer ${created.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (response) => {
    if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  });

const EXPERIMENTS = 3;
const FLAGS = 30;
await api('POST', '/events', { key: 'purchase', type: 'count' });
for (let e = 0; e < EXPERIMENTS; e++) {
  await api('POST', '/experiments', { key: `test_${e}`, event: 'purchase', coverage: e === 1 ? 80 : 100, ...(e === 0 && { conditions: { country: { $in: ['DE', 'US'] } } }) });
  for (const variant of ['control', 'treatment']) await api('POST', `/experiments/test_${e}/variants`, { key: variant, control: variant === 'control' });
  await api('POST', `/experiments/test_${e}/start`);
}
for (let f = 0; f < FLAGS; f++) {
  const experimentRule = f % 10 === 0 ? [{ type: 'experiment', experiment: `test_${f / 10}`, variants: { treatment: 'treated' } }] : [];
  const rules = [{ type: 'force', conditions: { country: 'CH', plan: 'pro' }, value: 'swiss' }, ...experimentRule, { type: 'rollout', conditions: { plan: { $ne: 'free' } }, percentage: 40, value: 'on' }];
  await api('POST', '/features', { key: `flag_${f}`, type: 'string', enabled: true, value: 'off', rules });
}

const COUNTRIES = ['DE', 'US', 'CH', 'FR'];
const PLANS = ['free', 'pro', 'team'];
const contexts = Array.from({ length: 20_000 }, (_, i) => ({ targetingKey: `user-${i}`, country: COUNTRIES[i % 4]!, plan: PLANS[(i >> 2) % 3]! }));
const attributes = contexts.map(({ targetingKey: _, ...rest }) => rest);
const flagKeys = Array.from({ length: FLAGS }, (_, f) => `flag_${f}`);

const options = { baseUrl: server.url, team, ingestKey: created.ingest_key, stream: false, flushIntervalMs: 3_600_000, maxQueue: 1, onError: () => undefined };
const provider = new ExperimentationServerProvider(options);
await OpenFeature.setProviderAndWait(provider);
const client = OpenFeature.getClient();
// The SDK's client the provider runs on: feature() and the provider decide with the same client, so
// that the ratio is what the wrapper adds (two clients in one process would make the SDK's shared
// code serve two sets of closures, which no application has).
const sdk = provider.client;
type Answer = string | null | { value: string };
type Decide = (i: number) => Answer | Promise<Answer>;
const contenders: Record<string, Decide> = {
  'feature()': (i) => sdk.feature<string>(flagKeys[i % FLAGS]!, contexts[i % contexts.length]!.targetingKey, attributes[i % contexts.length]),
  'provider resolveStringEvaluation()': (i) => provider.resolveStringEvaluation(flagKeys[i % FLAGS]!, 'off', contexts[i % contexts.length]!),
  'OpenFeature getStringValue()': (i) => client.getStringValue(flagKeys[i % FLAGS]!, 'off', contexts[i % contexts.length]!),
};

// The provider serves what feature() serves, for every participant and flag.
for (let i = 0; i < contexts.length * 3; i++) {
  const [own, wrapped] = [valueOf(await contenders['feature()']!(i)), valueOf(await contenders['provider resolveStringEvaluation()']!(i))];
  if (own !== wrapped) throw new Error(`participant ${i % contexts.length}, ${flagKeys[i % FLAGS]}: feature() ${own}, provider ${wrapped}`);
}

function valueOf(answer: Answer): string | null {
  return typeof answer === 'object' && answer !== null ? answer.value : answer;
}

let sink = 0;
/** Runs 1 000 decisions; answers the process's CPU time they took, in seconds (other processes' load is not counted). */
async function block(decide: Decide, from: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < 1000; i++) sink += valueOf(await decide(from + i))?.length ?? 0;
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1e6;
}

/** Decisions per CPU second of each of `names`, in blocks of 1 000 taking turns for `forSeconds`, each turn in the other order. */
async function round(names: string[], forSeconds: number): Promise<Record<string, number>> {
  const entries = names.map((name) => [name, contenders[name]!] as const);
  const cpu = Object.fromEntries(entries.map(([name]) => [name, 0]));
  let turns = 0;
  const until = performance.now() + forSeconds * 1000;
  do {
    for (const [name, decide] of turns % 2 === 0 ? entries : [...entries].reverse()) cpu[name]! += await block(decide, turns * 1000);
    turns++;
  } while (performance.now() < until);
  return Object.fromEntries(entries.map(([name]) => [name, (turns * 1000) / cpu[name]!]));
}
// feature() and the provider take turns; OpenFeature's client (much slower, and leaving garbage
// whose collection would fall in the next block) is timed in rounds of its own, after them: its
// merged contexts are objects of another shape, and an application's provider sees one kind of
// context (OpenFeature's, or its own when it calls the provider), not both in turn.
const PAIR = ['feature()', 'provider resolveStringEvaluation()'];
await round(PAIR, seconds / 2); // warm up the JIT
const rates = Object.fromEntries(Object.keys(contenders).map((name) => [name, [] as number[]]));
const ratios: number[] = [];
for (let r = 0; r < rounds; r++) {
  const measured = await round(PAIR, seconds);
  for (const [name, perSecond] of Object.entries(measured)) rates[name]!.push(perSecond);
  ratios.push(measured['provider resolveStringEvaluation()']! / measured['feature()']!);
}
await round(['OpenFeature getStringValue()'], seconds / 2);
for (let r = 0; r < rounds; r++) rates['OpenFeature getStringValue()']!.push((await round(['OpenFeature getStringValue()'], seconds / 4))['OpenFeature getStringValue()']!);
await OpenFeature.close();
await closeAll();

const results = {
  date: new Date().toISOString(),
  rounds,
  seconds,
  'decisions per CPU second': Object.fromEntries(Object.entries(rates).map(([name, list]) => [name, spread(list)])),
  'provider / feature() per round': ratios.map((ratio) => Math.round(ratio * 1000) / 1000),
  'provider / feature(), median': spread(ratios).median,
  target: 0.9,
};
console.log(JSON.stringify(results, null, 2));
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-openfeature.json`, JSON.stringify(results, null, 2) + '\n');
if (sink === Number.MIN_VALUE) console.log(sink);
