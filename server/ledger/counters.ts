import { metricValue, sumChange } from '../../domain/metric';
import { enrolmentChange, outcomeChange } from '../../domain/pre-exposure';
import type { ConversionMove, LedgerChange } from './change';

/**
 * The counters of each variant × event, as their columns in variant_event_counts and
 * daily_variant_event_counts are named. Each writer writes every one of them, in this order: a
 * new counter is a column here, its delta in `eventDelta`, and a migration.
 * `exact`: a sum kept exactly (decimal text in SQLite, numeric in PostgreSQL), else an integer;
 * `count`: never negative (the tables check it), where a sum may be (values may be).
 */
export const EVENT_COUNTERS = [
  { column: 'conversions', exact: false, count: true },
  { column: 'unique_conversions', exact: false, count: true },
  { column: 'sum_y', exact: true, count: false },
  { column: 'sum_y2', exact: true, count: false },
  { column: 'sum_x', exact: true, count: false },
  { column: 'sum_x2', exact: true, count: false },
  { column: 'sum_xy', exact: true, count: false },
] as const;

export type EventCounter = (typeof EVENT_COUNTERS)[number]['column'];

/** How much a change moves one variant's participants, counter and daily roll-up alike. */
export interface VariantDelta {
  teamId: number;
  variantId: number;
  participants: number;
}

/** How much a change moves one variant × event's counters, totals and daily roll-up alike. */
export interface EventDelta {
  teamId: number;
  variantId: number;
  eventId: number;
  counters: Record<EventCounter, bigint>;
}

/**
 * What a change moves in the counters: a participant for each enrolment it adds, one back for
 * each it takes back, with their covariates' x and x² (CUPED); and, for each conversion it moves,
 * the conversions, unique conversions, Σy and Σy² of the participant's capped y going from its
 * total before to its total after, and Σxy by x times y's change.
 */
export function countersOf(change: LedgerChange): { variants: VariantDelta[]; events: EventDelta[] } {
  const variants = new Map<number, VariantDelta>();
  const countVariant = (teamId: number, variantId: number, participants: number) => {
    const delta = variants.get(variantId);
    if (delta) delta.participants += participants;
    else variants.set(variantId, { teamId, variantId, participants });
  };
  const events = new Map<string, EventDelta>();
  const addEvent = (teamId: number, variantId: number, eventId: number, moved: Record<EventCounter, bigint>) => {
    const key = `${variantId}:${eventId}`;
    const delta = events.get(key);
    if (!delta) events.set(key, { teamId, variantId, eventId, counters: moved });
    else for (const { column } of EVENT_COUNTERS) delta.counters[column] += moved[column];
  };
  for (const enrolled of change.enrolments) {
    countVariant(enrolled.teamId, enrolled.variantId, 1);
    for (const { eventId, x } of enrolled.covariates) addEvent(enrolled.teamId, enrolled.variantId, eventId, covariateDelta(x, false));
  }
  for (const withdrawal of change.withdrawals) {
    if (!withdrawal.takenBack) continue;
    countVariant(withdrawal.teamId, withdrawal.variantId, -1);
    for (const { eventId, x } of withdrawal.covariates) addEvent(withdrawal.teamId, withdrawal.variantId, eventId, covariateDelta(x, true));
  }
  for (const move of change.conversions.values()) addEvent(move.teamId, move.variantId, move.eventId, eventDelta(move));
  return { variants: [...variants.values()], events: [...events.values()] };
}

/** One participant's conversions of one event moved from `before` to `after`, as each counter sees it. */
export function eventDelta({ metric, before, after, x }: Pick<ConversionMove, 'metric' | 'before' | 'after' | 'x'>): Record<EventCounter, bigint> {
  const [yBefore, yAfter] = [metricValue(metric, before), metricValue(metric, after)];
  const y = sumChange(yBefore, yAfter);
  const converted = (total: { count: number }) => (total.count > 0 ? 1n : 0n);
  const xy = outcomeChange(x, yBefore, yAfter).sumXY;
  return { conversions: BigInt(after.count - before.count), unique_conversions: converted(after) - converted(before), sum_y: y.y, sum_y2: y.y2, sum_x: 0n, sum_x2: 0n, sum_xy: xy };
}

/** A covariate entering or leaving its variant's counters: x and x² (its x·y moves with its conversions). */
function covariateDelta(x: bigint, leaving: boolean): Record<EventCounter, bigint> {
  const { sumX, sumX2 } = enrolmentChange(x, 0n, leaving);
  return { conversions: 0n, unique_conversions: 0n, sum_y: 0n, sum_y2: 0n, sum_x: sumX, sum_x2: sumX2, sum_xy: 0n };
}

/** Whether a delta takes counts back (a removal): the totals' checks refuse a row of negative counts even where it would update one, so it updates them instead. */
export const takesBack = (delta: EventDelta) => EVENT_COUNTERS.some(({ column, count }) => count && delta.counters[column] < 0n);
