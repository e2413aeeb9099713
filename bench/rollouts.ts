// `npx tsx bench/rollouts.ts [--rollouts 200] [--seed 20261128] [--traffic 100,1000,10000] [--minimum-exposures N] [--hold-minutes N]`:
// the seeded simulation behind the safe rollouts' targets. Each rollout runs the default ramp
// (1 → 5 → 10 → 25 → 50 → 100 %) through domain/rollout-decision.ts, checked once a
// minute: each minute `traffic` new participants who match the rollout arrive, each in the new
// arm with probability s and in the current arm with probability s (a multinomial draw, as the
// hash does), and each has an error event with probability 5 % in the current arm and, in the
// new arm, 6.5 % (harm) or 5 % (A/A). A rollout ends rolled back or released. Prints, per
// traffic, the share rolled back, the share rolled back before the 50 % step, the median
// exposures (both arms) and minutes to the decision. No assertion: figures for bench/README.md;
// the same seed gives the same figures.
import binomial from '@stdlib/random-base-binomial';
import { parseArgs } from 'node:util';
import { defaultSteps, type RolloutStep } from '../domain/rollout-arms';
import { decideRollout } from '../domain/rollout-decision';

const { values } = parseArgs({
  options: {
    rollouts: { type: 'string', default: '200' },
    seed: { type: 'string', default: '20261128' },
    traffic: { type: 'string', default: '100,1000,10000' },
    'minimum-exposures': { type: 'string' },
    'hold-minutes': { type: 'string' },
  },
});

const BASE_RATE = 0.05;
const HARMED_RATE = 0.065;

interface Outcome {
  rolledBack: boolean;
  /** The share of the step the rollout stood at when it was decided. */
  share: number;
  exposures: number;
  minutes: number;
}

function ramp(): RolloutStep[] {
  return defaultSteps().map((step) => ({
    ...step,
    ...(values['hold-minutes'] ? { holdSeconds: Number(values['hold-minutes']) * 60 } : {}),
    ...(values['minimum-exposures'] ? { minimumExposures: Number(values['minimum-exposures']) } : {}),
  }));
}

function simulate(draw: (n: number, p: number) => number, traffic: number, newRate: number): Outcome {
  const steps = ramp();
  const arms = { new: { participants: 0, uniqueConversions: 0 }, current: { participants: 0, uniqueConversions: 0 } };
  let step = 0;
  let stepStartedAt = 0;
  let atStepStart = { new: 0, current: 0 };
  for (let minute = 1; ; minute++) {
    const share = steps[step]!.percentage / 100;
    const arrivingNew = draw(traffic, share);
    const arrivingCurrent = draw(traffic - arrivingNew, share / (1 - share));
    arms.new.participants += arrivingNew;
    arms.new.uniqueConversions += draw(arrivingNew, newRate);
    arms.current.participants += arrivingCurrent;
    arms.current.uniqueConversions += draw(arrivingCurrent, BASE_RATE);
    const exposures = { new: arms.new.participants, current: arms.current.participants };
    const now = minute * 60_000;
    const decision = decideRollout({ steps, guardrails: [{ direction: 'decrease' }], step, stepStartedAt, now, paused: false, exposures, exposuresAtStepStart: atStepStart, arms: [arms] });
    const total = exposures.new + exposures.current;
    if (decision.action === 'roll_back' || decision.action === 'release') return { rolledBack: decision.action === 'roll_back', share: steps[step]!.percentage, exposures: total, minutes: minute };
    if (decision.action === 'advance') [step, stepStartedAt, atStepStart] = [decision.step, now, exposures];
  }
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)} %`;

const rollouts = Number(values.rollouts);
const steps = ramp();
console.log(`${rollouts} rollouts per row, seed ${values.seed}, ramp ${steps.map((s) => s.percentage).join(' → ')} %, hold ${steps[0]!.holdSeconds / 60} min, ${steps[0]!.minimumExposures} new exposures per arm per step, one check a minute`);
console.log('| participants matching a minute | new value | rolled back | before the 50 % step | median exposures to a decision (both arms) | median time to a decision |');
console.log('|---|---|---|---|---|---|');
for (const traffic of values.traffic.split(',').map(Number)) {
  for (const [label, rate] of [['5 % → 6.5 % errors', HARMED_RATE], ['A/A (5 %)', BASE_RATE]] as const) {
    const binomialDraw = binomial.factory({ seed: Number(values.seed) });
    const draw = (n: number, p: number) => (n === 0 ? 0 : binomialDraw(n, p));
    const outcomes = Array.from({ length: rollouts }, () => simulate(draw, traffic, rate));
    const rolledBack = outcomes.filter((o) => o.rolledBack);
    const early = rolledBack.filter((o) => o.share < 50);
    const hours = median(outcomes.map((o) => o.minutes)) / 60;
    console.log(`| ${traffic} | ${label} | ${percent(rolledBack.length, rollouts)} | ${percent(early.length, rollouts)} | ${median(outcomes.map((o) => o.exposures)).toLocaleString('en')} | ${hours.toFixed(1)} h |`);
  }
}
