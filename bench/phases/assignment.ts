import { randomBytes } from 'node:crypto';
import { GrowthBook, type Experiment } from '@growthbook/growthbook';
import { assignVariant, resolveTraffic } from '../../domain/assignment';
import { progress } from '../lib/load';
import type { Options } from '../lib/options';
import { EXPERIMENTS } from '../lib/setup';
import { spread, type Spread } from '../lib/stats';

export interface Contender {
  /** Assignments per second. */
  perSecond: Spread;
  /** Share of the participants in each variant, in percent: both should follow the weights. */
  shares: number[];
}

export interface AssignmentResult {
  experiment: string;
  weights: number[];
  participants: number;
  ours: Contender;
  growthbook: Contender;
  /** GrowthBook's server-side pattern: a new instance per request. For information. */
  growthbookPerInstance: Contender;
}

type Decide = (participant: string) => number;

/**
 * The pure assignment function against GrowthBook's JavaScript SDK deciding the same
 * experiment (same weights, same participant ids) through `GrowthBook#run`. The two hash
 * differently (SHA-256 against FNV-1a), so they agree on the shares, not on each participant.
 */
export function assignmentPhase(options: Options): AssignmentResult {
  const experiment = EXPERIMENTS.find((candidate) => candidate.variants.length === 3)!;
  const seed = randomBytes(16).toString('hex');
  const variants = resolveTraffic(experiment.variants.map((variant) => ('traffic' in variant ? (variant.traffic as number) : null))).map(
    (traffic, index) => ({ index, traffic }),
  );
  const gbExperiment: Experiment<number> = {
    key: experiment.key,
    variations: variants.map((variant) => variant.index) as [number, number, number],
    weights: variants.map((variant) => variant.traffic / 100),
    hashAttribute: 'id',
    hashVersion: 2,
    seed,
  };
  // The SDK as a product configures it: a tracking callback, which the SDK calls once per participant.
  const growthbook = new GrowthBook({ attributes: { id: '' }, trackingCallback: () => {} });

  const contenders: Record<'ours' | 'growthbook' | 'growthbookPerInstance', Decide> = {
    ours: (participant) => assignVariant(seed, participant, variants)?.index ?? -1,
    growthbook: (participant) => {
      void growthbook.setAttributes({ id: participant }); // synchronous without sticky buckets or remote evaluation
      return growthbook.run(gbExperiment).value;
    },
    growthbookPerInstance: (participant) => {
      const perRequest = new GrowthBook({ attributes: { id: participant }, trackingCallback: () => {} });
      const value = perRequest.run(gbExperiment).value;
      perRequest.destroy(); // as a server does at the end of a request
      return value;
    },
  };

  const participants = options.quick ? 20_000 : 200_000;
  const ids = Array.from({ length: participants }, (_, i) => `user-${i}`);
  const seconds = options.quick ? 0.5 : Math.min(options.duration, 3);
  const rates: Record<keyof typeof contenders, number[]> = { ours: [], growthbook: [], growthbookPerInstance: [] };
  // GrowthBook keeps about 4 KB per instance it ever made, destroyed or not: the per-instance
  // pattern gets a bounded number of participants a round, or a fast machine runs out of heap.
  const most = (name: keyof typeof contenders) => (name === 'growthbookPerInstance' ? PER_INSTANCE_MOST : Infinity);
  for (const [name, decide] of Object.entries(contenders) as Array<[keyof typeof contenders, Decide]>) rate(decide, ids, seconds / 2, most(name)); // warm up the JIT
  // Rounds alternate between contenders so that neither gets the quieter moments.
  for (let round = 0; round < options.rounds; round++) {
    for (const [name, decide] of Object.entries(contenders) as Array<[keyof typeof contenders, Decide]>) {
      rates[name].push(rate(decide, ids, seconds, most(name)));
      progress(`assignment ${name}: round ${round + 1}/${options.rounds}  ${Math.round(rates[name].at(-1)!).toLocaleString('en-US')} assignments/s`);
    }
  }
  const contender = (name: keyof typeof contenders): Contender => ({
    perSecond: spread(rates[name]),
    shares: shares(contenders[name], ids.slice(0, most(name)), variants.length),
  });
  return {
    experiment: experiment.key,
    weights: variants.map((variant) => variant.traffic),
    participants,
    ours: contender('ours'),
    growthbook: contender('growthbook'),
    growthbookPerInstance: contender('growthbookPerInstance'),
  };
}

let sink = 0;

const PER_INSTANCE_MOST = 20_000;

/** Decisions per second over `seconds` (or until `most` decisions). */
function rate(decide: Decide, ids: string[], seconds: number, most = Infinity): number {
  let done = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  do {
    for (let i = 0; i < 1000; i++) sink += decide(ids[(done + i) % ids.length]!);
    done += 1000;
  } while (performance.now() < until && done < most);
  if (sink === Number.MIN_VALUE) console.log(sink); // keeps the results alive for the optimiser
  return done / ((performance.now() - started) / 1000);
}

function shares(decide: Decide, ids: string[], count: number): number[] {
  const counts = new Array<number>(count).fill(0);
  for (const id of ids) {
    const index = decide(id);
    if (index >= 0) counts[index]!++;
  }
  return counts.map((n) => (100 * n) / ids.length);
}
