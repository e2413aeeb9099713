import { readFileSync } from 'node:fs';
import binomial from '@stdlib/random-base-binomial';
import { describe, expect, it } from 'vitest';
import { compareMeans } from '../../domain/means';
import { confidenceSequence, meansAlwaysValid, MIXING_EFFECT_SIZE, rateAlwaysValid } from '../../domain/sequential';
import { compareWithControl } from '../../domain/statistics';

interface Vector {
  arm: { participants: number; uniqueConversions: number };
  control: { participants: number; uniqueConversions: number };
  alpha: number;
  effectSize: number;
  lower: number;
  upper: number;
}
const vectors = JSON.parse(readFileSync(new URL('../vectors/sequential.json', import.meta.url), 'utf8')) as { cases: Vector[] };

describe('confidenceSequence', () => {
  it.each(vectors.cases.map((v) => [`${v.arm.uniqueConversions}/${v.arm.participants} vs ${v.control.uniqueConversions}/${v.control.participants}, α ${v.alpha}, τ ${v.effectSize} SD`, v]))(
    'when %s, then it equals the reference computed by bisection on the mSPRT likelihood ratio, to 4 decimals',
    (_, vector) => {
      const interval = confidenceSequence(vector.arm, vector.control, vector.alpha, vector.effectSize)!;
      expect(interval.lower).toBeCloseTo(vector.lower, 4);
      expect(interval.upper).toBeCloseTo(vector.upper, 4);
    },
  );

  it('when compared with the fixed-horizon 95 % interval on the same counts, then it is wider (the price of looking at any time)', () => {
    const arm = { participants: 5000, uniqueConversions: 560, conversions: 560 };
    const control = { participants: 5000, uniqueConversions: 500, conversions: 500 };
    const fixed = compareWithControl(arm, control, false).differenceInterval!;
    const sequence = confidenceSequence(arm, control)!;
    expect(sequence.lower).toBeLessThan(fixed.lower);
    expect(sequence.upper).toBeGreaterThan(fixed.upper);
  });

  it('when the arms convert at 1 % or at 50 %, then τ is a tenth of their standard deviation, not a fixed number of rate points', () => {
    const halfWidth = (interval: { lower: number; upper: number }) => (interval.upper - interval.lower) / 2;
    const rare = rateAlwaysValid({ participants: 10_000, uniqueConversions: 100 }, { participants: 10_000, uniqueConversions: 100 })!;
    const even = rateAlwaysValid({ participants: 10_000, uniqueConversions: 5_000 }, { participants: 10_000, uniqueConversions: 5_000 })!;
    // Same n, same relative tuning: the width scales with the SD, √(0.01 · 0.99) / √(0.5 · 0.5).
    expect(halfWidth(rare.confidenceSequence) / halfWidth(even.confidenceSequence)).toBeCloseTo(Math.sqrt(0.0099 / 0.25), 6);
  });

  it('when an arm has no participants or no variance, then null; a bad α or τ is a RangeError', () => {
    expect(confidenceSequence({ participants: 0, uniqueConversions: 0 }, { participants: 10, uniqueConversions: 1 })).toBeNull();
    expect(confidenceSequence({ participants: 10, uniqueConversions: 0 }, { participants: 10, uniqueConversions: 0 })).toBeNull();
    expect(confidenceSequence({ participants: 10, uniqueConversions: 10 }, { participants: 10, uniqueConversions: 0 })).toBeNull();
    expect(() => confidenceSequence({ participants: 10, uniqueConversions: 1 }, { participants: 10, uniqueConversions: 1 }, 0)).toThrow(RangeError);
    expect(() => confidenceSequence({ participants: 10, uniqueConversions: 1 }, { participants: 10, uniqueConversions: 1 }, 0.05, 0)).toThrow(RangeError);
  });
});

/**
 * A/A experiments (both arms convert at the same rate), each watched after every 100 participants
 * up to 10 000 and stopped at the first look that declares a difference: by the fixed-horizon test
 * (p < 0.05) and by the always-valid sequence (excludes 0). At a 1 %, a 10 % and a 50 % base rate,
 * since τ follows the rate's standard deviation. Seeded, so the rates are the same on every run.
 */
describe('peeking at A/A experiments', () => {
  const EXPERIMENTS = 1_000;
  const LOOKS = 100;
  const PER_LOOK = 100;

  it.each([
    [0.01, 20261126],
    [0.1, 20261124],
    [0.5, 20261127],
  ])(`when ${EXPERIMENTS} A/A experiments converting at %f are looked at every ${PER_LOOK} participants, then the fixed-horizon test declares a difference far more often than 5 % and the sequence at most 5 %`, (rate, seed) => {
    const draw = binomial.factory({ seed });
    let fixedFalsePositives = 0;
    let sequentialFalsePositives = 0;
    for (let experiment = 0; experiment < EXPERIMENTS; experiment++) {
      const arm = { participants: 0, uniqueConversions: 0, conversions: 0 };
      const control = { participants: 0, uniqueConversions: 0, conversions: 0 };
      let fixedFired = false;
      let sequenceFired = false;
      for (let look = 0; look < LOOKS && !(fixedFired && sequenceFired); look++) {
        for (const group of [arm, control]) {
          const converted = draw(PER_LOOK / 2, rate);
          group.participants += PER_LOOK / 2;
          group.uniqueConversions += converted;
          group.conversions += converted;
        }
        const pValue = compareWithControl(arm, control, false).pValue;
        if (pValue !== null && pValue < 0.05) fixedFired = true;
        const sequence = confidenceSequence(arm, control);
        if (sequence && (sequence.lower > 0 || sequence.upper < 0)) sequenceFired = true;
      }
      if (fixedFired) fixedFalsePositives++;
      if (sequenceFired) sequentialFalsePositives++;
    }
    const fixedRate = fixedFalsePositives / EXPERIMENTS;
    const sequentialRate = sequentialFalsePositives / EXPERIMENTS;
    console.info(
      `[A/A peeking] ${EXPERIMENTS} experiments, ${LOOKS} looks of ${PER_LOOK} participants, rate ${rate}, τ ${MIXING_EFFECT_SIZE} SD: ` +
        `false positives fixed-horizon ${(100 * fixedRate).toFixed(1)} %, always-valid ${(100 * sequentialRate).toFixed(1)} %`,
    );
    expect(fixedRate).toBeGreaterThan(0.15);
    expect(sequentialRate).toBeLessThanOrEqual(0.05);
  });
});

/**
 * The same for revenue per visitor, a skewed mean: 5 % of visitors buy, a basket is
 * 10 · 2^k euros with k ~ Binomial(6, 0.3) (10 to 640) — the sequence on the difference of means,
 * tuned at 0.1 standard deviations whatever the unit, keeps its promise where Welch's
 * fixed-horizon test, looked at repeatedly, does not.
 */
describe('peeking at A/A experiments on revenue per visitor', () => {
  const EXPERIMENTS = 400;
  const LOOKS = 30;
  const PER_ARM_AND_LOOK = 100;

  it(`when ${EXPERIMENTS} A/A experiments are looked at every ${2 * PER_ARM_AND_LOOK} participants, then Welch's test declares a difference far more often than 5 % and the sequence on the means at most 5 %`, () => {
    const draw = binomial.factory({ seed: 20261125 });
    let fixedFalsePositives = 0;
    let sequentialFalsePositives = 0;
    for (let experiment = 0; experiment < EXPERIMENTS; experiment++) {
      const arms = [0, 1].map(() => ({ participants: 0, sum: 0, sumOfSquares: 0 }));
      let fixedFired = false;
      let sequenceFired = false;
      for (let look = 0; look < LOOKS && !(fixedFired && sequenceFired); look++) {
        for (const arm of arms) {
          for (let visitor = 0; visitor < PER_ARM_AND_LOOK; visitor++) {
            const euros = draw(1, 0.05) === 1 ? 10 * 2 ** draw(6, 0.3) : 0;
            arm.participants += 1;
            arm.sum += euros;
            arm.sumOfSquares += euros * euros;
          }
        }
        const fixed = compareMeans(arms[0]!, arms[1]!);
        if (fixed && fixed.pValue < 0.05) fixedFired = true;
        const sequence = meansAlwaysValid(arms[0]!, arms[1]!);
        if (sequence && sequence.pValue < 0.05) sequenceFired = true;
      }
      if (fixedFired) fixedFalsePositives++;
      if (sequenceFired) sequentialFalsePositives++;
    }
    const fixedRate = fixedFalsePositives / EXPERIMENTS;
    const sequentialRate = sequentialFalsePositives / EXPERIMENTS;
    console.info(
      `[A/A peeking, revenue] ${EXPERIMENTS} experiments, ${LOOKS} looks of ${PER_ARM_AND_LOOK} per arm, τ ${MIXING_EFFECT_SIZE} SD: ` +
        `false positives Welch ${(100 * fixedRate).toFixed(1)} %, always-valid ${(100 * sequentialRate).toFixed(1)} %`,
    );
    expect(fixedRate).toBeGreaterThan(0.12);
    expect(sequentialRate).toBeLessThanOrEqual(0.05);
  });
});
