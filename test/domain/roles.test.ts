import { readFileSync } from 'node:fs';
import binomial from '@stdlib/random-base-binomial';
import { describe, expect, it } from 'vitest';
import { judgeByRole, type Judgement, type RoleEvent } from '../../domain/roles';
import { rateAlwaysValid } from '../../domain/sequential';

/** Cases computed by test/vectors/roles.py: adjusted p-values as the smallest α at which Holm or Benjamini–Hochberg rejects. */
const vectors = JSON.parse(readFileSync(new URL('../vectors/roles.json', import.meta.url), 'utf8')) as { cases: Array<{ events: RoleEvent[]; expected: Judgement[][] }> };

const arm = (participants: number, uniqueConversions: number) => ({ participants, uniqueConversions });

describe('judgeByRole', () => {
  it('when a decrease event goes down significantly, then the variant is better, and worse for an increase event', () => {
    const down = [arm(5_000, 500)];
    const [[asDecrease], [asIncrease]] = judgeByRole([
      { role: 'secondary', direction: 'decrease', control: arm(5_000, 1_000), variants: down },
      { role: 'goal', direction: 'increase', control: arm(5_000, 1_000), variants: down },
    ]);
    expect(asDecrease!.verdict).toBe('variant_better');
    expect(asIncrease!.verdict).toBe('variant_worse');
  });

  it('when a guardrail gets worse in its bad direction, then it is violated; when it gets better, then it is not', () => {
    const [[worse, better]] = judgeByRole([{ role: 'guardrail', direction: 'decrease', control: arm(5_000, 500), variants: [arm(5_000, 1_000), arm(5_000, 250)] }]);
    expect(worse!.verdict).toBe('guardrail_violated');
    expect(worse!.adjustedPValue).toBe(worse!.pValue);
    expect(better!.verdict).toBe('no_difference');
  });

  it('when the goal has several variants, then their p-values are Holm-adjusted: the smallest times the count', () => {
    const [goal] = judgeByRole([{ role: 'goal', direction: 'increase', control: arm(5_000, 500), variants: [arm(5_000, 560), arm(5_000, 500), arm(5_000, 510)] }]);
    const smallest = goal!.reduce((a, b) => (a.pValue! < b.pValue! ? a : b));
    expect(smallest.adjustedPValue).toBeCloseTo(Math.min(1, smallest.pValue! * 3), 12);
  });

  it('when secondary events share a family, then their adjusted p-values are Benjamini–Hochberg over variants × events', () => {
    const events: RoleEvent[] = [
      { role: 'secondary', direction: 'increase', control: arm(5_000, 500), variants: [arm(5_000, 600), arm(5_000, 505)] },
      { role: 'secondary', direction: 'increase', control: arm(5_000, 500), variants: [arm(5_000, 520), arm(5_000, 700)] },
    ];
    const judged = judgeByRole(events).flat();
    const largest = judged.reduce((a, b) => (a.pValue! > b.pValue! ? a : b));
    expect(largest.adjustedPValue).toBe(largest.pValue);
    const smallest = judged.reduce((a, b) => (a.pValue! < b.pValue! ? a : b));
    expect(smallest.adjustedPValue).toBeLessThanOrEqual(smallest.pValue! * 4);
    expect(smallest.adjustedPValue).toBeGreaterThan(smallest.pValue!);
  });

  it.each(vectors.cases.map((c, i) => [i, c] as const))('when case %i of the independent vectors is judged, then every p-value, adjusted p-value and verdict matches', (_, vector) => {
    const judged = judgeByRole(vector.events);
    vector.expected.forEach((event, i) =>
      event.forEach((expected, j) => {
        const actual = judged[i]![j]!;
        expect(actual.verdict).toBe(expected.verdict);
        for (const field of ['pValue', 'adjustedPValue'] as const) {
          if (expected[field] === null) expect(actual[field]).toBeNull();
          else expect(actual[field]).toBeCloseTo(expected[field], 9);
        }
      }),
    );
  });

  it('audit, a guardrail\'s level: when harm is significant at 5 % one-sided but not two-sided, then the guardrail is violated — on a rate and on a mean, either direction', () => {
    const [rate, decreasing, mean] = judgeByRole([
      { role: 'guardrail', direction: 'increase', control: arm(4_000, 800), variants: [arm(4_000, 698)] },
      { role: 'guardrail', direction: 'decrease', control: arm(4_000, 200), variants: [arm(4_000, 262)] },
      { role: 'guardrail', direction: 'decrease', metric: 'mean', control: { participants: 3_000, uniqueConversions: 0, sum: 3_000, sumOfSquares: 9_000 }, variants: [{ participants: 3_000, uniqueConversions: 0, sum: 3_330, sumOfSquares: 10_000 }] },
    ]);
    // The two-sided always-valid p of each lies between 0.05 and 0.1 (test/vectors/roles.py, case 4).
    expect(rateAlwaysValid(arm(4_000, 698), arm(4_000, 800))!.pValue).toBeGreaterThan(0.05);
    expect(rateAlwaysValid(arm(4_000, 262), arm(4_000, 200))!.pValue).toBeGreaterThan(0.05);
    for (const [judged] of [rate!, decreasing!, mean!]) {
      expect(judged!.verdict).toBe('guardrail_violated');
      expect(judged!.pValue).toBeLessThanOrEqual(0.05);
    }
  });

  it('when an arm has fewer than the minimum participants, then the verdict is collecting', () => {
    const [[judged]] = judgeByRole([{ role: 'goal', direction: 'increase', control: arm(99, 10), variants: [arm(5_000, 4_000)] }]);
    expect(judged!.verdict).toBe('collecting');
  });
});

/**
 * A/A/A/A experiments with 20 events (the goal, 19 secondary), looked at at the end of each of
 * 14 days: any goal verdict other than no_difference/collecting at any look is a family-wise
 * false positive; any secondary one is a false discovery (all hypotheses are null, so the false
 * discovery proportion of a look with a discovery is 1 and the FDR at any stopping rule is at
 * most the share of experiments with a discovery at some look).
 */
describe('the roles in a seeded A/A/A/A simulation', () => {
  it('when nothing differs and it is looked at daily, then the goal family-wise error and the secondary FDR stay at most 5 %', () => {
    const draw = binomial.factory({ seed: 20261124 });
    const experiments = 1_000;
    const arms = 4;
    const eventCount = 20;
    const days = 14;
    const perDay = 300;
    const rates = Array.from({ length: eventCount }, (_, e) => 0.02 + (0.4 * e) / eventCount);
    let goalFalse = 0;
    let secondaryFalse = 0;
    let secondaryUncorrected = 0;
    for (let x = 0; x < experiments; x++) {
      const conversions = rates.map(() => new Array<number>(arms).fill(0));
      let goalHit = false;
      let secondaryHit = false;
      let uncorrectedHit = false;
      for (let day = 1; day <= days; day++) {
        const participants = perDay * day;
        // Each day's new participants convert independently; cumulative counts as the service keeps them.
        rates.forEach((rate, e) => conversions[e]!.forEach((_, a) => (conversions[e]![a]! += draw(perDay, rate))));
        const events: RoleEvent[] = rates.map((_, e) => ({
          role: e === 0 ? 'goal' : 'secondary',
          direction: e % 3 === 0 ? 'decrease' : 'increase',
          control: arm(participants, conversions[e]![0]!),
          variants: conversions[e]!.slice(1).map((c) => arm(participants, c)),
        }));
        const judged = judgeByRole(events);
        const declared = (i: number) => judged[i]!.some((j) => j.verdict === 'variant_better' || j.verdict === 'variant_worse');
        goalHit ||= declared(0);
        secondaryHit ||= events.some((_, i) => i > 0 && declared(i));
        uncorrectedHit ||= events.some((_, i) => i > 0 && judged[i]!.some((j) => j.pValue !== null && j.pValue < 0.05));
      }
      goalFalse += Number(goalHit);
      secondaryFalse += Number(secondaryHit);
      secondaryUncorrected += Number(uncorrectedHit);
    }
    const familyWise = goalFalse / experiments;
    const falseDiscovery = secondaryFalse / experiments;
    console.info(`A/A/A/A, ${experiments} experiments × ${days} daily looks: goal family-wise false positives ${(familyWise * 100).toFixed(1)} %, secondary FDR at most ${(falseDiscovery * 100).toFixed(1)} % (uncorrected ${((secondaryUncorrected / experiments) * 100).toFixed(1)} %)`);
    expect(familyWise).toBeLessThanOrEqual(0.05);
    expect(falseDiscovery).toBeLessThanOrEqual(0.05);
  });
});

/**
 * A guardrail looked at daily for 14 days: under no harm (A/A, and a variant better on it), the
 * one-sided test may raise a false alarm in at most 5 % of the experiments at any look; under a
 * true harm it catches more than the two-sided test at 0.05 it replaced.
 */
describe('guardrails in a seeded simulation', () => {
  it('when nothing is harmed, then at most 5 % of experiments ever see guardrail_violated; when there is harm, then the one-sided test catches it more often than the two-sided one did', () => {
    const draw = binomial.factory({ seed: 20261128 });
    const experiments = 1_000;
    const days = 14;
    const perDay = 300;
    const base = 0.1;
    const run = (variantRate: number) => {
      let oneSided = 0;
      let twoSided = 0;
      for (let x = 0; x < experiments; x++) {
        let control = 0;
        let variant = 0;
        let oneHit = false;
        let twoHit = false;
        for (let day = 1; day <= days; day++) {
          control += draw(perDay, base);
          variant += draw(perDay, variantRate);
          const participants = perDay * day;
          const [[judged]] = judgeByRole([{ role: 'guardrail', direction: 'increase', control: arm(participants, control), variants: [arm(participants, variant)] }]);
          oneHit ||= judged!.verdict === 'guardrail_violated';
          const twoSidedFigures = rateAlwaysValid(arm(participants, variant), arm(participants, control));
          twoHit ||= twoSidedFigures !== null && twoSidedFigures.pValue <= 0.05 && twoSidedFigures.difference < 0;
        }
        oneSided += Number(oneHit);
        twoSided += Number(twoHit);
      }
      return { oneSided: oneSided / experiments, twoSided: twoSided / experiments };
    };
    const same = run(base);
    const better = run(0.11);
    const harmed = run(0.09);
    console.info(`guardrail, ${experiments} experiments × ${days} daily looks: false alarms ${(same.oneSided * 100).toFixed(1)} % (A/A), ${(better.oneSided * 100).toFixed(1)} % (variant better); a 10 % fall caught ${(harmed.oneSided * 100).toFixed(1)} % one-sided, ${(harmed.twoSided * 100).toFixed(1)} % by the two-sided test at 0.05`);
    expect(same.oneSided).toBeLessThanOrEqual(0.05);
    expect(better.oneSided).toBeLessThanOrEqual(0.05);
    expect(harmed.oneSided).toBeGreaterThan(harmed.twoSided);
  });
});
