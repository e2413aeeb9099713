// `node --expose-gc --import tsx bench/sdk.ts [--rounds 3] [--seconds 1] [--rate 10000] [--load-seconds 5] [--down-seconds 60] [--flips 20]`:
// the SDK (generated/sdk.js, as consumers get it) against the real server, a process of its own on scratch SQLite.
// (a) Decisions per second, in process: `experiment()` against GrowthBook's `runInlineExperiment()` and
//     `feature()` against its `evalFeature()` (GrowthBookClient, its server-side SDK), on the same 5 running
//     experiments and 50 flags with conditions, the same participants and attributes; rounds alternate.
// (b) `--rate` exposures and events a second from one client for `--load-seconds`: the batch requests it makes
//     a second (retries included), and every item stored.
// (c) The service down for `--down-seconds` (every request of the client fails as a refused connection does)
//     while the client goes on at `--rate`: the live heap (after a
//     full collection) every 5 s, the queue at its bound, what was dropped; then the service back.
// (d) Config polls with nothing changed: status and body bytes of each answer after the first.
// (e) `--flips` flag flips through the API, one after the other: from the PUT being sent until a streaming
//     client's `feature()` answers the new value.
// Prints the figures and writes bench/results/<day>-sdk.json.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GrowthBookClient, type Experiment, type FeatureDefinitions, type FeatureRule } from '@growthbook/growthbook';
import { createTeam } from '../server/admin/service';
import { openStorage } from '../server/storage/database';
import { createClient, type Attributes, type Client, type Config } from '../generated/sdk.js';
import { startRealServer } from './lib/environment';
import { spread } from './lib/stats';
import { scratchStorage } from './lib/storage';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '1' },
    rate: { type: 'string', default: '10000' },
    'load-seconds': { type: 'string', default: '5' },
    'down-seconds': { type: 'string', default: '60' },
    flips: { type: 'string', default: '20' },
  },
});
const rounds = Number(values.rounds);
const itemsPerSecond = Number(values.rate);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc --import tsx bench/sdk.ts');

// The real server, a process of its own on scratch SQLite (rate limits out of reach, as in every bench).
const scratch = await scratchStorage('sqlite');
const server = await startRealServer('server', scratch, { cpuProf: false });
const baseUrl = server.url;
const storage = await openStorage({ ...scratch.options, poolSize: 1 });
const created = await createTeam(storage.db, { name: 'sdk bench', email: 'sdk@bench.example' }).finally(() => storage.close());
const team = created.team.id;
async function call(method: string, path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${baseUrl}/api/teams/${team}${path}`, { method, headers: { authorization: `Bearer ${created.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
}

// 5 running experiments (conditions on three, coverage below 100 % on two) and 50 flags: each with a
// force rule on a condition and a rollout on another; every tenth also with an experiment rule.
const EXPERIMENTS = 5;
const FLAGS = 50;
await call('POST', '/events', { key: 'purchase', type: 'count' });
for (let i = 0; i < EXPERIMENTS; i++) {
  const key = `experiment_${i}`;
  await call('POST', '/experiments', { key, event: 'purchase', coverage: i % 2 === 0 ? 100 : 80, ...(i < 3 && { conditions: { country: { $in: ['DE', 'US', 'FR'] } } }) });
  await call('POST', `/experiments/${key}/variants`, { key: 'control', control: true });
  await call('POST', `/experiments/${key}/variants`, { key: 'treatment' });
  await call('POST', `/experiments/${key}/start`);
}
for (let i = 0; i < FLAGS; i++) {
  const rules: unknown[] = [
    { type: 'force', conditions: { country: { $in: ['AT', 'CH'] }, plan: 'pro' }, value: 'alpine' },
    ...(i % 10 === 0 ? [{ type: 'experiment', experiment: `experiment_${i / 10}`, variants: { control: 'old', treatment: 'new' } }] : []),
    { type: 'rollout', conditions: { plan: { $in: ['pro', 'team'] } }, percentage: 30, value: 'on' },
  ];
  await call('POST', '/features', { key: `flag_${i}`, enabled: true, value: 'off', rules });
}

const COUNTRIES = ['DE', 'US', 'FR', 'AT', 'GB', 'CH'];
const PLANS = ['free', 'pro', 'team'];
const participants = Array.from({ length: 100_000 }, (_, i) => ({ key: `user-${i}`, attributes: { country: COUNTRIES[i % 6]!, plan: PLANS[(i >> 1) % 3]! } as Attributes }));

// (a) Decisions.
const deciding = createClient({ baseUrl, team, ingestKey: created.ingest_key, stream: false, flushIntervalMs: 3_600_000, maxQueue: 1, onError: () => undefined });
await deciding.ready();
const config = deciding.config()!;
const growthbook = new GrowthBookClient({ trackingCallback: () => undefined }).initSync({ payload: { features: growthbookFeatures(config) } });
const inline = growthbookExperiments(config);
const experimentKeys = config.experiments.map((experiment) => experiment.key);
const flagKeys = config.features.map((feature) => feature.key);

type Decide = (i: number) => string | null | undefined;
const contenders: Record<string, Decide> = {
  'experiment()': (i) => deciding.experiment(experimentKeys[i % EXPERIMENTS]!, participants[i % participants.length]!.key, participants[i % participants.length]!.attributes),
  'GrowthBook runInlineExperiment()': (i) => {
    const participant = participants[i % participants.length]!;
    const result = growthbook.runInlineExperiment(inline[i % EXPERIMENTS]!, { attributes: { id: participant.key, ...participant.attributes } });
    return result.inExperiment ? result.value : null;
  },
  'feature()': (i) => deciding.feature<string>(flagKeys[i % FLAGS]!, participants[i % participants.length]!.key, participants[i % participants.length]!.attributes),
  'GrowthBook evalFeature()': (i) => {
    const participant = participants[i % participants.length]!;
    return growthbook.evalFeature(flagKeys[i % FLAGS]!, { attributes: { id: participant.key, ...participant.attributes } }).value as string | null;
  },
};
let sink = 0;
function rate(decide: Decide, seconds: number): number {
  let done = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  do {
    for (let i = 0; i < 1000; i++) sink += decide(done + i)?.length ?? 0;
    done += 1000;
  } while (performance.now() < until);
  return done / ((performance.now() - started) / 1000);
}
const agreement = {
  // Both hash differently: they agree on who is eligible and on the shares, not on each participant.
  'experiment(): in an experiment, %': share((i) => contenders['experiment()']!(i) !== null),
  'GrowthBook: in an experiment, %': share((i) => contenders['GrowthBook runInlineExperiment()']!(i) !== null),
  'feature(): not the flag value, %': share((i) => contenders['feature()']!(i) !== 'off'),
  'GrowthBook: not the flag value, %': share((i) => contenders['GrowthBook evalFeature()']!(i) !== 'off'),
};
function share(test: (i: number) => boolean): number {
  let count = 0;
  for (let i = 0; i < participants.length; i++) if (test(i)) count++;
  return Math.round((1000 * count) / participants.length) / 10;
}
for (const decide of Object.values(contenders)) rate(decide, Number(values.seconds) / 2); // warm up the JIT
const rates = Object.fromEntries(Object.keys(contenders).map((name) => [name, [] as number[]]));
for (let round = 0; round < rounds; round++) for (const [name, decide] of Object.entries(contenders)) rates[name]!.push(rate(decide, Number(values.seconds)));
await deciding.close();
const decisions = Object.fromEntries(Object.entries(rates).map(([name, list]) => [name, spread(list)]));

// (b) Load: exposures and events at `rate` a second, paced every 10 ms; half exposures of new participants, half their events.
async function play(client: Client, seconds: number, onTick?: (elapsed: number) => void): Promise<number> {
  let sent = 0;
  let next = 0;
  const started = performance.now();
  for (;;) {
    const elapsed = (performance.now() - started) / 1000;
    if (elapsed >= seconds) return sent;
    const due = Math.floor(elapsed * itemsPerSecond);
    while (sent < due) {
      const participant = `load-${next++}`;
      if (client.experiment('experiment_4', participant) !== null) sent++;
      client.track(participant, 'purchase');
      sent++;
    }
    onTick?.(elapsed);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
// Every batch request the client makes, retries included, when it makes it.
const batchRequests: number[] = [];
const counted: typeof fetch = (input, init) => {
  if (String(input).endsWith('/ingest/batch')) batchRequests.push(performance.now());
  return fetch(input, init);
};
const loading = createClient({ baseUrl, team, ingestKey: created.ingest_key, stream: false, fetch: counted, onError: () => undefined });
await loading.ready();
const loadStarted = performance.now();
const loadItems = await play(loading, Number(values['load-seconds']));
const loadSeconds = (performance.now() - loadStarted) / 1000;
const requestsDuringLoad = batchRequests.filter((at) => at <= loadStarted + loadSeconds * 1000).length;
await loading.close();
const perSecondWindows = new Map<number, number>();
for (const at of batchRequests) perSecondWindows.set(Math.floor((at - loadStarted) / 1000), (perSecondWindows.get(Math.floor((at - loadStarted) / 1000)) ?? 0) + 1);
const load = {
  items: loadItems,
  itemsPerSecond: Math.round(loadItems / loadSeconds),
  batchRequestsPerSecond: Math.round((10 * requestsDuringLoad) / loadSeconds) / 10,
  mostInOneSecond: Math.max(...perSecondWindows.values()),
  delivered: loading.stats().delivered,
  rejected: loading.stats().rejected,
  dropped: loading.stats().dropped,
};

// (d) Unchanged config polls.
const polls: Array<{ status: number; bytes: number }> = [];
const polling = createClient({
  baseUrl,
  team,
  ingestKey: created.ingest_key,
  stream: false,
  pollIntervalMs: 100,
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    if (String(input).endsWith('/config')) polls.push({ status: response.status, bytes: (await response.clone().arrayBuffer()).byteLength });
    return response;
  },
});
await polling.ready();
while (polls.length < 11) await new Promise((resolve) => setTimeout(resolve, 50));
await polling.close();
const unchangedPolls = polls.slice(1, 11);

// (c) The service down while the app goes on.
const downSeconds = Number(values['down-seconds']);
// Down: every request fails as a refused connection does.
let down = false;
const outageFetch: typeof fetch = (input, init) => (down ? Promise.reject(new TypeError('fetch failed')) : fetch(input, init));
const enduring = createClient({ baseUrl, team, ingestKey: created.ingest_key, stream: false, fetch: outageFetch, onError: () => undefined });
await enduring.ready();
gc();
const heapBefore = process.memoryUsage().heapUsed;
down = true;
const heap: Array<{ second: number; heapMiB: number; queued: number }> = [];
let nextSample = 0;
const downItems = await play(enduring, downSeconds, (elapsed) => {
  if (elapsed < nextSample) return;
  nextSample += 5;
  gc();
  heap.push({ second: Math.round(elapsed), heapMiB: Math.round(process.memoryUsage().heapUsed / 104_857.6) / 10, queued: enduring.stats().queued });
});
gc();
const heapDown = process.memoryUsage().heapUsed;
const statsDown = enduring.stats();
down = false;
const backAt = performance.now();
await enduring.flush();
const drainSeconds = (performance.now() - backAt) / 1000;
await enduring.close();
const outage = {
  seconds: downSeconds,
  items: downItems,
  heapBeforeMiB: Math.round(heapBefore / 104_857.6) / 10,
  heapAfterMiB: Math.round(heapDown / 104_857.6) / 10,
  heap,
  queuedAtEnd: statsDown.queued,
  dropped: statsDown.dropped,
  deliveredOnceBack: enduring.stats().delivered,
  drainSeconds: Math.round(drainSeconds * 10) / 10,
};

// (e) Flips reaching a streaming client.
const streaming = createClient({ baseUrl, team, ingestKey: created.ingest_key, pollIntervalMs: 3_600_000, onError: () => undefined });
await streaming.ready();
const flipMs: number[] = [];
for (let flip = 0; flip < Number(values.flips); flip++) {
  const enabled = flip % 2 === 1;
  const sentAt = performance.now();
  const put = fetch(`${baseUrl}/api/teams/${team}/features/flag_1`, { method: 'PUT', headers: { authorization: `Bearer ${created.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ enabled }) });
  while ((streaming.feature('flag_1', 'user-1') === null) === enabled) await new Promise((resolve) => setImmediate(resolve));
  flipMs.push(performance.now() - sentAt);
  if ((await put).status !== 200) throw new Error('a flip failed');
}
await streaming.close();
const flips = { count: flipMs.length, ms: spread(flipMs) };

await server.stop();
await scratch.drop();

const results = { rounds, secondsPerRound: Number(values.seconds), decisions, agreement, load, unchangedPolls, outage, flips, flipMs };
const perSecond = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(`(a) decisions per second, median of ${rounds} rounds [min–max], ${EXPERIMENTS} experiments, ${FLAGS} flags`);
for (const [name, s] of Object.entries(decisions)) console.log(`  ${name.padEnd(34)} ${perSecond(s.median).padStart(12)}  [${perSecond(s.min)}–${perSecond(s.max)}]`);
console.log(`  experiment() / runInlineExperiment(): ${(decisions['experiment()']!.median / decisions['GrowthBook runInlineExperiment()']!.median).toFixed(2)} ×`);
console.log(`  feature() / evalFeature(): ${(decisions['feature()']!.median / decisions['GrowthBook evalFeature()']!.median).toFixed(2)} ×`);
console.log('  shares:', JSON.stringify(agreement));
console.log(`(b) ${perSecond(load.items)} items at ${perSecond(load.itemsPerSecond)}/s: ${load.batchRequestsPerSecond} batch requests/s (most in one second: ${load.mostInOneSecond}); delivered ${load.delivered}, rejected ${load.rejected}, dropped ${load.dropped}`);
console.log(`(c) ${downSeconds} s down, ${perSecond(outage.items)} items: live heap ${outage.heapBeforeMiB} → ${outage.heapAfterMiB} MiB, queue ${outage.queuedAtEnd}, dropped ${outage.dropped}; back: ${outage.deliveredOnceBack} delivered in ${outage.drainSeconds} s`);
console.log(`    heap every 5 s: ${heap.map((sample) => `${sample.second}s ${sample.heapMiB} MiB (${sample.queued})`).join(', ')}`);
console.log(`(d) unchanged polls: ${JSON.stringify(unchangedPolls.map((poll) => `${poll.status}/${poll.bytes} B`))}`);
console.log(`(e) ${flips.count} flips to a streaming client: median ${flips.ms.median.toFixed(1)} ms [${flips.ms.min.toFixed(1)}–${flips.ms.max.toFixed(1)}]`);
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-sdk.json`, JSON.stringify(results, null, 2) + '\n');
if (sink === Number.MIN_VALUE) console.log(sink);

/** GrowthBook's features for the same flags: rules in the same order, the experiment's own targeting and split with the rule's. */
function growthbookFeatures(source: Config): FeatureDefinitions {
  const experiments = new Map(source.experiments.map((experiment) => [experiment.key, experiment]));
  return Object.fromEntries(
    source.features.map((feature) => {
      const rules: FeatureRule[] = (feature.rules ?? []).map((rule): FeatureRule => {
        if (rule.type === 'force') return { condition: rule.conditions ?? undefined, force: rule.value };
        if (rule.type === 'rollout') return { condition: rule.conditions ?? undefined, force: rule.value, coverage: rule.percentage / 100, hashAttribute: 'id' };
        const experiment = experiments.get(rule.experiment)!;
        const own = growthbookExperiment(experiment.key, experiments);
        return {
          key: own.key,
          condition: { $and: [rule.conditions ?? {}, own.condition ?? {}] },
          variations: experiment.variants.map((variant) => rule.variants[variant.key] ?? feature.value),
          weights: own.weights,
          coverage: own.coverage,
          hashAttribute: 'id',
          hashVersion: 2,
          seed: own.seed,
        };
      });
      return [feature.key, { defaultValue: feature.enabled ? feature.value : null, rules: feature.enabled ? rules : [] }];
    }),
  );
}

function growthbookExperiments(source: Config): Array<Experiment<string>> {
  const experiments = new Map(source.experiments.map((experiment) => [experiment.key, experiment]));
  return source.experiments.map((experiment) => growthbookExperiment(experiment.key, experiments));
}

function growthbookExperiment(key: string, experiments: Map<string, Config['experiments'][number]>): Experiment<string> {
  const experiment = experiments.get(key)!;
  return {
    key,
    variations: experiment.variants.map((variant) => variant.key) as [string, string, ...string[]],
    weights: experiment.variants.map((variant) => variant.traffic / 100),
    coverage: experiment.coverage / 100,
    condition: experiment.conditions ?? undefined,
    hashAttribute: 'id',
    hashVersion: 2,
    seed: experiment.seed,
  };
}
