/**
 * A participant's pre-exposure value of an event (CUPED's covariate x) and how it moves the
 * counters Σx, Σx², Σxy — pure functions.
 *
 * What a participant does is kept per event and UTC day (its count and value sum) for as long as
 * the longest window of the team's experiments reaches back. At enrolment, x is the metric over
 * the window's whole days before the day of enrolment — [enrolment day − window, enrolment day) —
 * and is then frozen: what the participant does afterwards is y. The day of enrolment itself is
 * left out because a day's bucket cannot tell what came before the enrolment from what came after.
 */
import { addDays } from './days';
import type { Covariate } from './estimate';
import { metricValue, type MetricType } from './metric';

/** The window of an experiment that does not set one. */
export const DEFAULT_WINDOW_DAYS = 14;
/** The longest window an experiment may set (0 turns the adjustment off). */
export const MAX_WINDOW_DAYS = 60;

/** What a participant did on one event on one UTC day: its number of events and the sum of their values in micro-units. */
export interface DayActivity {
  day: string;
  count: number;
  value: bigint;
}

/** The first and the last day (`YYYY-MM-DD`, inclusive) counted in x for an enrolment at `enrolledAt`; null when the window is 0. */
export function windowOf(enrolledAt: string, windowDays: number): { first: string; last: string } | null {
  if (!(Number.isSafeInteger(windowDays) && windowDays >= 0 && windowDays <= MAX_WINDOW_DAYS)) throw new RangeError(`the window must be an integer number of days from 0 to ${MAX_WINDOW_DAYS}`);
  if (windowDays === 0) return null;
  const day = enrolledAt.slice(0, 10);
  return { first: addDays(day, -windowDays), last: addDays(day, -1) };
}

/**
 * x in micro-units: the event's metric (metric.ts, capped as y is) over the participant's activity
 * in the window — for a yes/no (`unique`) event, 1 when it did the event then, else 0. 0 when the
 * window is 0 or the participant did nothing in it.
 */
export function preExposureValue(event: { type: MetricType; cap: number | null }, activity: DayActivity[], enrolledAt: string, windowDays: number): bigint {
  const window = windowOf(enrolledAt, windowDays);
  if (!window) return 0n;
  const inside = activity.filter((a) => a.day >= window.first && a.day <= window.last);
  const total = { count: inside.reduce((sum, a) => sum + a.count, 0), value: inside.reduce((sum, a) => sum + a.value, 0n) };
  if (event.type === 'unique') return total.count > 0 ? 1_000_000n : 0n;
  return metricValue(event, total);
}

/**
 * How a variant's Σx, Σx² and Σxy change when a participant with covariate x enters it while its y
 * is `y` (usually 0; the enrolling event may already count): x, x², x·y. Leaving (unenrol, delete)
 * is the same change negated (`leaving`), so the sums return exactly to what they were.
 */
export function enrolmentChange(x: bigint, y: bigint, leaving = false): Covariate {
  const sign = leaving ? -1n : 1n;
  return { sumX: sign * x, sumX2: sign * x * x, sumXY: sign * x * y };
}

/** How Σxy changes when an enrolled participant's y goes from `before` to `after`: x·(after − before); Σx and Σx² stay. */
export function outcomeChange(x: bigint, before: bigint, after: bigint): Covariate {
  return { sumX: 0n, sumX2: 0n, sumXY: x * (after - before) };
}

/** The oldest day a sweep at `now` keeps: older days are in no window of an enrolment from today on. */
export function oldestKeptDay(now: string, longestWindowDays: number): string {
  return addDays(now.slice(0, 10), -Math.max(0, longestWindowDays));
}
