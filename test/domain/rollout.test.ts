import { readFileSync } from 'node:fs';
import binomial from '@stdlib/random-base-binomial';
import { describe, expect, it } from 'vitest';
import { defaultSteps, rampProblem, rolloutArm, type RolloutStep } from '../../domain/rollout-arms';
import { decideRollout, type RolloutCheck, type RolloutGuardrail } from '../../domain/rollout-decision';
import { harmPValue, rateMixture } from '../../domain/sequential';

const vectors = JSON.parse(readFileSync(new URL('../vectors/rollout-arms.json', import.meta.url), 'utf8')) as {
  cases: Array<{ seed: string; participant: string; share: number; arm: 'new' | 'current' | null }>;
};

describe('rolloutArm', () => {
  it.each(vectors.cases.map((c) => [`${c.participant} at ${c.share} %`, c] as const))('when %s, then the arm is the independent implementation’s', (_, c) => {
    expect(rolloutArm(c.seed, c.participant, c.share)).toBe(c.arm);
  });

  it('when the share rises 1 → 5 → 10 → 25 → 50 %, then arms only gain participants, never overlap, stay balanced, and 100 % serves everyone the new value', () => {
    const seed = '0123456789abcdef0123456789abcdef';
    const participants = Array.from({ length: 20_000 }, (_, i) => `p${i}`);
    let before = new Map<string, string>();
    for (const share of [1, 5, 10, 25, 50]) {
      const arms = new Map(participants.flatMap((p) => (rolloutArm(seed, p, share) ? [[p, rolloutArm(seed, p, share)!] as const] : [])));
      for (const [p, arm] of before) expect(arms.get(p)).toBe(arm);
      const count = (arm: string) => [...arms.values()].filter((a) => a === arm).length;
      const expected = (participants.length * share) / 100;
      expect(Math.abs(count('new') - expected)).toBeLessThan(4 * Math.sqrt(expected) + 1);
      expect(Math.abs(count('current') - expected)).toBeLessThan(4 * Math.sqrt(expected) + 1);
      before = arms;
    }
    expect(participants.every((p) => rolloutArm(seed, p, 100) === 'new')).toBe(true);
  });
});

describe('rampProblem', () => {
  const step = (percentage: number, holdSeconds = 60, minimumExposures = 100): RolloutStep => ({ percentage, holdSeconds, minimumExposures });
  it.each([
    ['the default ramp', defaultSteps(), null],
    ['one compared step and the release', [step(50), step(100)], null],
    ['the release alone', [step(100)], 'percentage'],
    ['a last step below 100', [step(10), step(50)], 'percentage'],
    ['a compared step above 50', [step(10), step(75), step(100)], 'percentage'],
    ['a share that falls', [step(10), step(5), step(100)], 'percentage'],
    ['three decimals', [step(0.125), step(100)], 'percentage'],
    ['a negative hold time', [step(10, -1), step(100)], 'holdSeconds'],
    ['fractional exposures', [step(10, 60, 1.5), step(100)], 'minimumExposures'],
  ] as const)('when %s, then the problem names %s', (_, steps, field) => {
    expect(rampProblem(steps)?.field ?? null).toBe(field);
  });
});

const errors: RolloutGuardrail = { direction: 'decrease' };
const rate = (participants: number, uniqueConversions: number) => ({ participants, uniqueConversions });

/** The default ramp at step `step` (25 % by default), begun an hour ago with 10 000 exposures in each arm. */
function check(arms: RolloutCheck['arms'], overrides: Partial<RolloutCheck> = {}): RolloutCheck {
  const exposures = { new: arms[0]?.new.participants ?? 20_000, current: arms[0]?.current.participants ?? 20_000 };
  return { steps: defaultSteps(), guardrails: arms.map(() => errors), step: 3, stepStartedAt: 0, now: 3_600_000, paused: false, exposures, exposuresAtStepStart: { new: 10_000, current: 10_000 }, arms, ...overrides };
}

describe('decideRollout', () => {
  const neutral = { new: rate(20_000, 1_000), current: rate(20_000, 1_000) };
  const harmful = { new: rate(20_000, 1_300), current: rate(20_000, 1_000) };
  const helpful = { new: rate(20_000, 700), current: rate(20_000, 1_000) };

  it.each([
    ['no guardrail moves and the step is done', 'advances to 50 %', [neutral], {}, { action: 'advance', step: 4 }],
    ['the error rate rises 5 % → 6.5 %', 'rolls back', [harmful], {}, { action: 'roll_back', guardrail: 0 }],
    ['the error rate falls', 'advances', [helpful], {}, { action: 'advance', step: 4 }],
    ['the second guardrail is harmed', 'rolls back naming it', [neutral, harmful], {}, { action: 'roll_back', guardrail: 1 }],
    ['the 50 % step is done', 'releases', [neutral], { step: 4 }, { action: 'release' }],
    ['the hold time is not over', 'waits for it', [neutral], { now: 3_599_999 }, { action: 'wait', until: 'hold_time' }],
    ['the new arm lacks exposures at this step', 'waits for them', [neutral], { exposuresAtStepStart: { new: 18_001, current: 10_000 } }, { action: 'wait', until: 'exposures' }],
    ['the current arm lacks exposures at this step', 'waits for them', [neutral], { exposuresAtStepStart: { new: 10_000, current: 18_001 } }, { action: 'wait', until: 'exposures' }],
    ['it is paused', 'waits to be resumed', [neutral], { paused: true }, { action: 'wait', until: 'resumed' }],
    ['it is paused and harmed', 'rolls back', [harmful], { paused: true }, { action: 'roll_back', guardrail: 0 }],
    ['an arm has fewer than 100 participants, however different', 'does not roll back', [{ new: rate(99, 60), current: rate(99, 1) }], { exposuresAtStepStart: { new: 0, current: 0 }, steps: [{ percentage: 1, holdSeconds: 0, minimumExposures: 0 }, { percentage: 100, holdSeconds: 0, minimumExposures: 0 }], step: 0 }, { action: 'release' }],
  ] as const)('when %s, then it %s', (_, __, arms, overrides, expected) => {
    expect(decideRollout(check(arms, overrides))).toMatchObject(expected);
  });

  it('when the arms are 10 000 against 10 600 exposures, then it holds (χ² p < 0.001), also while a guardrail is harmed', () => {
    const decision = decideRollout(check([harmful], { exposures: { new: 10_000, current: 10_600 } }));
    expect(decision).toMatchObject({ action: 'hold' });
    expect(decision.action === 'hold' && decision.sampleRatioPValue).toBeLessThan(0.001);
  });

  it('when a guardrail is rolled back, then its reading has the difference, an interval above 0 and p ≤ α', () => {
    const [reading] = decideRollout(check([harmful])).guardrails;
    expect(reading!.difference).toBeCloseTo(0.015, 12);
    expect(reading!.interval!.lower).toBeGreaterThan(0);
    expect(reading!.adjustedPValue).toBeLessThanOrEqual(0.05);
  });

  it('when one guardrail alone is just harmed (p in (α/2, α]), then it rolls back; beside a second, quiet guardrail, Holm keeps it', () => {
    let converters = 1_000;
    const pOf = (x: number) => harmPValue(rateMixture(rate(20_000, x), rate(20_000, 1_000))!, 'above');
    while (pOf(converters) > 0.05) converters++;
    expect(pOf(converters)).toBeGreaterThan(0.025);
    const borderline = { new: rate(20_000, converters), current: rate(20_000, 1_000) };
    expect(decideRollout(check([borderline]))).toMatchObject({ action: 'roll_back' });
    const both = decideRollout(check([borderline, neutral]));
    expect(both).toMatchObject({ action: 'advance' });
    expect(both.guardrails[0]!.adjustedPValue).toBeCloseTo(2 * pOf(converters), 12);
  });

  it('when a mean guardrail whose direction is decrease (seconds of latency) rises by 0.1 standard deviation, then it rolls back', () => {
    const latency = (participants: number, mean: number) => ({ participants, uniqueConversions: participants, sum: participants * mean, sumOfSquares: participants * (mean * mean + 1) });
    const decision = decideRollout({ ...check([{ new: latency(5_000, 2.1), current: latency(5_000, 2) }], { exposures: { new: 5_000, current: 5_000 }, exposuresAtStepStart: { new: 0, current: 0 } }), guardrails: [{ direction: 'decrease', metric: 'mean' }] });
    expect(decision).toMatchObject({ action: 'roll_back', guardrail: 0 });
  });

  it('when 400 seeded A/A ramps are checked after every 500 exposures per arm until released, then at most 5 % are rolled back', () => {
    const draw = binomial.factory({ seed: 20261128 });
    let rolledBack = 0;
    for (let r = 0; r < 400; r++) {
      const steps = defaultSteps().map((s) => ({ ...s, holdSeconds: 0 }));
      let step = 0;
      let atStepStart = { new: 0, current: 0 };
      const arms = { new: rate(0, 0), current: rate(0, 0) };
      for (;;) {
        for (const arm of [arms.new, arms.current]) {
          arm.participants += 500;
          arm.uniqueConversions += draw(500, 0.05);
        }
        const exposures = { new: arms.new.participants, current: arms.current.participants };
        const decision = decideRollout({ steps, guardrails: [errors], step, stepStartedAt: 0, now: 0, paused: false, exposures, exposuresAtStepStart: atStepStart, arms: [arms] });
        if (decision.action === 'roll_back') rolledBack++;
        if (decision.action === 'roll_back' || decision.action === 'release') break;
        if (decision.action === 'advance') [step, atStepStart] = [decision.step, exposures];
      }
    }
    console.log(`A/A, 400 ramps checked every 500 exposures per arm: ${((100 * rolledBack) / 400).toFixed(1)} % rolled back`);
    expect(rolledBack / 400).toBeLessThanOrEqual(0.05);
  });
});
