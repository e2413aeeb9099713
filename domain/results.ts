/**
 * What the results read adds to the fixed-horizon statistics — pure functions: each variant's
 * always-valid comparison with the control and its verdict, and the daily roll-up summed into
 * the counts as they stood at the end of each day.
 */

import { addDays } from './days';
import { judgedMixture, type ComparedArm, type Covariate, type Metric } from './estimate';
import type { MeanArm } from './means';
import { alwaysValid, type AlwaysValid } from './sequential';
import type { ArmCounts, Interval } from './statistics';

/** Participants each of the variant and the control need before a verdict other than `collecting`. */
export const MINIMUM_PARTICIPANTS = 100;
/** A sample-ratio check below this p-value is a warning: assignment or collection is broken. */
export const SRM_WARNING_BELOW = 0.001;

export type Verdict = 'collecting' | 'no_difference' | 'variant_better' | 'variant_worse';
type ArmRate = Pick<ArmCounts, 'participants' | 'uniqueConversions'>;

export interface SequentialComparison {
  difference: number | null;
  confidenceSequence: Interval | null;
  verdict: Verdict | null;
}

/** The always-valid figures at α = 0.05 of the judged difference (estimate.ts: adjusted when the arms carry a covariate). */
function sequenceOf(arm: ComparedArm, control: ComparedArm, metric: Metric): AlwaysValid | null {
  const mixture = judgedMixture(arm, control, metric);
  return mixture && alwaysValid(mixture.difference, mixture.variance, 0.05, mixture.mixingSd);
}

/**
 * The variant against the control on the unique rate; all null for the control itself and when
 * there is none. With a covariate on both arms the difference and the sequence are the
 * regression-adjusted ones (falling back to the unadjusted ones where the adjustment does not apply).
 */
export function compareSequentially(arm: ComparedArm, control: ComparedArm | undefined, isControl: boolean): SequentialComparison {
  if (isControl || !control) return { difference: null, confidenceSequence: null, verdict: null };
  if (arm.participants === 0 || control.participants === 0) return { difference: null, confidenceSequence: null, verdict: 'collecting' };
  const figures = sequenceOf(arm, control, 'rate');
  const sequence = figures?.confidenceSequence ?? null;
  return {
    difference: figures?.difference ?? arm.uniqueConversions / arm.participants - control.uniqueConversions / control.participants,
    confidenceSequence: sequence,
    verdict: verdictOf(sequence, arm, control),
  };
}

export interface MeansSequentialComparison {
  difference: number;
  confidenceSequence: Interval;
  pValue: number;
  verdict: Verdict;
}

/**
 * The always-valid comparison of the variant's mean with the control's (τ on the standardised
 * scale, see sequential.ts), regression-adjusted with a covariate on both arms; null for the
 * control, without one, below 2 participants in an arm or without variance.
 */
export function compareMeansSequentially(arm: MeanArm & ComparedArm, control: (MeanArm & ComparedArm) | undefined, isControl: boolean): MeansSequentialComparison | null {
  if (isControl || !control) return null;
  const figures = sequenceOf(arm, control, 'mean');
  if (!figures) return null;
  return { ...figures, verdict: verdictOf(figures.confidenceSequence, arm, control) };
}

function verdictOf(sequence: Interval | null, arm: { participants: number }, control: { participants: number }): Verdict {
  if (sequence === null || arm.participants < MINIMUM_PARTICIPANTS || control.participants < MINIMUM_PARTICIPANTS) return 'collecting';
  if (sequence.lower > 0) return 'variant_better';
  if (sequence.upper < 0) return 'variant_worse';
  return 'no_difference';
}

/**
 * One day's change of one variant's counters (negative when participants left); `micros` the exact
 * sums of the event's metric (see MeanArm), `covariate` the change of its pre-exposure sums when
 * CUPED is on.
 */
export interface DailyChange {
  variantId: number;
  day: string;
  participants: number;
  uniqueConversions: number;
  micros: { sum: bigint; sumOfSquares: bigint };
  covariate?: Covariate;
}

/** An arm at the end of a day; with a covariate once any change carried one. */
export type DayArm = ArmRate & Required<MeanArm> & { covariate?: Covariate };

export interface DayTotals {
  day: string;
  /** Cumulative counts at the end of the day, by variant id. */
  totals: Map<number, DayArm>;
}

/** Sums the daily changes into the totals at the end of every day from the first change to the last, gaps included. */
export function cumulativeDays(changes: DailyChange[], variantIds: number[]): DayTotals[] {
  if (changes.length === 0) return [];
  const byDay = new Map<string, DailyChange[]>();
  for (const change of changes) byDay.set(change.day, [...(byDay.get(change.day) ?? []), change]);
  const days = [...byDay.keys()].sort();
  const running = new Map<number, DayArm>(variantIds.map((id) => [id, { participants: 0, uniqueConversions: 0, sum: 0, sumOfSquares: 0, micros: { sum: 0n, sumOfSquares: 0n } }]));
  const result: DayTotals[] = [];
  for (let day = days[0]; day <= days[days.length - 1]; day = nextDay(day)) {
    for (const change of byDay.get(day) ?? []) {
      const total = running.get(change.variantId);
      if (!total) continue;
      total.participants += change.participants;
      total.uniqueConversions += change.uniqueConversions;
      total.micros = { sum: total.micros.sum + change.micros.sum, sumOfSquares: total.micros.sumOfSquares + change.micros.sumOfSquares };
      total.sum = Number(total.micros.sum) / 1e6;
      total.sumOfSquares = Number(total.micros.sumOfSquares) / 1e12;
      if (change.covariate) total.covariate = addCovariates(total.covariate, change.covariate);
    }
    result.push({ day, totals: new Map([...running].map(([id, total]) => [id, { ...total }])) });
  }
  return result;
}

function addCovariates(total: Covariate | undefined, change: Covariate): Covariate {
  if (!total) return { ...change };
  return { sumX: total.sumX + change.sumX, sumX2: total.sumX2 + change.sumX2, sumXY: total.sumXY + change.sumXY };
}

const nextDay = (day: string): string => addDays(day, 1);

/** Days from start to end (now while running), to two decimals; null before the start. */
export function daysRunning(startedAt: string | null, stoppedAt: string | null, now: string): number | null {
  if (startedAt === null) return null;
  const end = Date.parse(stoppedAt ?? now);
  return Math.round(((end - Date.parse(startedAt)) / 86_400_000) * 100) / 100;
}
