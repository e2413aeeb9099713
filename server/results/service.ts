import type { components } from '../../generated/api';
import { compareMeansSequentially, compareSequentially, cumulativeDays, daysRunning, MINIMUM_PARTICIPANTS, SRM_WARNING_BELOW, type DailyChange, type DayArm, type MeansSequentialComparison } from '../../domain/results';
import { addDays } from '../../domain/days';
import { MIXING_EFFECT_SIZE } from '../../domain/sequential';
import { requireExperiment } from '../experiments/service';
import { coverageChangesOf, guardrailsOf, type ExperimentRow } from '../experiments/store';
import { judgeByRole, type Judgement, type Role, type RoleEvent } from '../../domain/roles';
import { toPercent } from '../../domain/coverage';
import { NotFound } from '../http/errors';
import { eventsByKey } from '../events/store';
import type { Db } from '../storage/database';
import { inSnapshot } from '../storage/snapshot';
import { iso, isoOrNull, now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { armTotalsOf, eventStatistics, experimentSrm } from '../variants/statistics';
import { variantsOf, type ResolvedVariant } from '../experiments/variants-store';
import { countsOnEvents, dailyChangesOf, lastCountedDay } from './store';

/** The fixed τ rates were tuned with until 1.5.0; no sequence uses it now, the field stays for existing clients. */
const DEPRECATED_MIXING_SD = 0.02;

type ExperimentResults = components['schemas']['ExperimentResults'];
type EventResults = components['schemas']['EventResults'];
type EventType = components['schemas']['EventType'];
type ResultsDay = components['schemas']['ResultsHistory']['days'][number];
type MeansSequence = components['schemas']['MeansSequence'];
type Decision = components['schemas']['Decision'];
type JudgedMetric = components['schemas']['JudgedMetric'];

interface EventRow {
  id: number;
  key: string;
  type: EventType;
  direction: 'increase' | 'decrease';
}

/** What a results read describes: its events (the goal alone by default), the event of its history, and the history's days at most. */
export interface ResultsSelection {
  events?: string[];
  historyEvent?: string;
  historyDays?: number;
}

export const HISTORY_DAYS = 90;

/** Reads the experiment's counters and its daily roll-up from one snapshot, then describes them. */
export async function experimentResults(db: Db, team: TeamRow, experimentKey: string, selection: ResultsSelection = {}): Promise<ExperimentResults> {
  const read = await inSnapshot(db, async (snapshot) => {
    const experiment = await requireExperiment(snapshot, team, experimentKey);
    const variants = await variantsOf(snapshot, team.id, experiment.id);
    const events: EventRow[] = await eventsByKey(snapshot, team.id);
    const eventNamed = (key: string) => {
      const event = events.find((e) => e.key === key);
      if (!event) throw new NotFound(`No event '${key}' in team ${team.id}.`);
      return event;
    };
    const goal = events.find((e) => e.id === experiment.event_id)!;
    const chosen = selection.events === undefined ? [goal] : [...new Set(selection.events)].map(eventNamed);
    const historyEvent = selection.historyEvent === undefined ? goal : eventNamed(selection.historyEvent);
    const variantIds = variants.map((v) => v.id);
    // Every event's counts: the corrections run over the whole team's events, whichever are chosen.
    const counts = await countsOnEvents(snapshot, team.id, variantIds, events.map((event) => event.id));
    const last = await lastCountedDay(snapshot, team.id, variantIds, historyEvent.id);
    const daily = last === null ? { participants: [], conversions: [] } : await dailyChangesOf(snapshot, team.id, variantIds, historyEvent.id, addDays(last, 1 - (selection.historyDays ?? HISTORY_DAYS)));
    const coverageChanges = await coverageChangesOf(snapshot, team.id, experiment.id);
    return { experiment, variants, goal, events, chosen, historyEvent, counts, daily, coverageChanges };
  });
  const coverage_changes = read.coverageChanges.map((change) => ({ at: iso(change.changed_at), from: toPercent(change.from_coverage), to: toPercent(change.to_coverage) }));
  // Computed once the snapshot is let go: on SQLite it holds the one connection.
  const roles = rolesOf(read.experiment, read.goal, read.events);
  const results = await describe(read.experiment, ordered(read.variants), read.goal, read.chosen, read.counts, read.historyEvent, dailyChanges(read.daily, read.experiment.pre_exposure_days > 0), roles);
  return { ...results, coverage: toPercent(read.experiment.coverage), coverage_changes };
}

/** The control first, then by key. */
function ordered(variants: ResolvedVariant[]): ResolvedVariant[] {
  return [...variants].sort((a, b) => Number(Boolean(b.control)) - Number(Boolean(a.control)) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The roll-up's changes; with `cuped`, the changes of the pre-exposure sums too. */
function dailyChanges(daily: Awaited<ReturnType<typeof dailyChangesOf>>, cuped: boolean): DailyChange[] {
  return [
    ...daily.participants.map((row) => ({ variantId: row.variant_id, day: row.day, participants: row.participants, uniqueConversions: 0, micros: { sum: 0n, sumOfSquares: 0n } })),
    ...daily.conversions.map((row) => ({ variantId: row.variant_id, day: row.day, participants: 0, uniqueConversions: row.unique_conversions, micros: row.micros, ...(cuped && { covariate: row.covariate }) })),
  ];
}

type Counts = Awaited<ReturnType<typeof countsOnEvents>>;

interface EventRole {
  event: EventRow;
  role: Role;
}

/** Every event of the team with its role: the goal first, then the others by key. */
function rolesOf(experiment: ExperimentRow, goal: EventRow, events: EventRow[]): EventRole[] {
  const guardrails = new Set(guardrailsOf(experiment).map((event) => event.id));
  return [goal, ...events.filter((event) => event.id !== goal.id)].map((event) => ({
    event,
    role: event.id === goal.id ? 'goal' : guardrails.has(event.id) ? 'guardrail' : 'secondary',
  }));
}

/** The corrected judgement of each event × variant other than the control, by event id then variant id. */
function judgements(roles: EventRole[], variants: ResolvedVariant[], control: ResolvedVariant | undefined, armOn: ReturnType<typeof armTotalsOf>): Map<number, Map<number, Judgement>> {
  if (!control) return new Map();
  const others = variants.filter((variant) => variant.id !== control.id);
  const judged = judgeByRole(roles.map(({ event, role }) => ({ role, direction: event.direction, metric: metricOf(event), control: armOn(control, event.id), variants: others.map((variant) => armOn(variant, event.id)) })));
  return new Map(roles.map(({ event }, i) => [event.id, new Map(others.map((variant, j) => [variant.id, judged[i]![j]!]))]));
}

/** What an event's verdicts compare: the unique rate, or the mean per participant of a count or value event. */
const metricOf = (event: EventRow): RoleEvent['metric'] => (event.type === 'unique' ? 'rate' : 'mean');
const judgedMetricOf = (event: EventRow): JudgedMetric => (event.type === 'unique' ? 'unique_conversion_rate' : 'mean');

const CORRECTIONS: Record<Role, NonNullable<Decision>['correction']> = { goal: 'holm', secondary: 'benjamini_hochberg', guardrail: 'none' };

/** The one verdict of a variant on an event, with what it judges and the figures it is read from; null for the control. */
function decisionOf(event: EventRow, role: Role, judgement: Judgement | undefined, sequence: Pick<NonNullable<Decision>, 'difference' | 'confidence_sequence'> | null): Decision {
  if (!judgement) return null;
  return {
    metric: judgedMetricOf(event),
    difference: sequence?.difference ?? null,
    confidence_sequence: sequence?.confidence_sequence ?? null,
    test: role === 'guardrail' ? 'one_sided' : 'two_sided',
    always_valid_p_value: judgement.pValue,
    correction: CORRECTIONS[role],
    adjusted_p_value: judgement.adjustedPValue,
    verdict: judgement.verdict,
  };
}

function meansSequenceOf(event: EventRow, comparison: () => MeansSequentialComparison | null): MeansSequence {
  if (event.type === 'unique') return null;
  const figures = comparison();
  return figures && { difference: figures.difference, confidence_sequence: figures.confidenceSequence, always_valid_p_value: figures.pValue, verdict: figures.verdict };
}

/**
 * The corrected verdict of each variant on one day of the history, by variant id: the goal's
 * family (its variants) and a guardrail (itself) lie within the event; a secondary event's
 * family spans the team's secondary events, which the history does not read — none then.
 */
function dayVerdicts(event: EventRow, role: Role, variants: ResolvedVariant[], control: ResolvedVariant | undefined, totals: Map<number, DayArm>): Map<number, Judgement['verdict']> {
  if (!control || role === 'secondary') return new Map();
  const others = variants.filter((variant) => variant.id !== control.id);
  const [judged] = judgeByRole([{ role, direction: event.direction, metric: metricOf(event), control: totals.get(control.id)!, variants: others.map((variant) => totals.get(variant.id)!) }]);
  return new Map(others.map((variant, j) => [variant.id, judged![j]!.verdict]));
}

/**
 * The results of the chosen events and the history, computed a slice at a time (an event, or
 * HISTORY_SLICE days) with a yield to the event loop between slices: at the limits they are
 * some 11 000 sequential tests, which would otherwise hold up every other request meanwhile.
 */
async function describe(experiment: ExperimentRow, variants: ResolvedVariant[], goal: EventRow, events: EventRow[], counts: Counts, historyEvent: EventRow, changes: DailyChange[], roles: EventRole[]): Promise<Omit<ExperimentResults, 'coverage' | 'coverage_changes'>> {
  const control = variants.find((v) => Boolean(v.control));
  const armOn = armTotalsOf(counts, experiment.pre_exposure_days > 0);
  const judged = judgements(roles, variants, control, armOn);
  const roleOf = new Map(roles.map(({ event, role }) => [event.id, role]));
  const srm = experimentSrm(variants);
  const eventResults: EventResults[] = [];
  for (const event of events) {
    await yieldToOthers();
    eventResults.push({
      event: event.key,
      type: event.type,
      goal: event.id === goal.id,
      role: roleOf.get(event.id)!,
      direction: event.direction,
      metric: judgedMetricOf(event),
      variants: variants.map((variant) => {
        const arm = armOn(variant, event.id);
        const controlArm = control && armOn(control, event.id);
        const isControl = variant.id === control?.id;
        const sequential = compareSequentially(arm, controlArm, isControl);
        const judgement = judged.get(event.id)?.get(variant.id);
        const means = meansSequenceOf(event, () => compareMeansSequentially(arm, controlArm, isControl));
        const judgedSequence = event.type === 'unique' ? { difference: sequential.difference, confidence_sequence: sequential.confidenceSequence } : means;
        return {
          variant: variant.key,
          control: isControl,
          participants: variant.participants,
          statistics: eventStatistics(event, arm, controlArm ?? armOn(undefined, event.id), isControl, experiment),
          difference: sequential.difference,
          confidence_sequence: sequential.confidenceSequence,
          verdict: sequential.verdict,
          means_sequence: means,
          always_valid_p_value: judgement?.pValue ?? null,
          adjusted_p_value: judgement?.adjustedPValue ?? null,
          corrected_verdict: judgement?.verdict ?? null,
          decision: decisionOf(event, roleOf.get(event.id)!, judgement, judgedSequence),
        };
      }),
    });
  }
  const days: ResultsDay[] = [];
  for (const { day, totals } of cumulativeDays(changes, variants.map((v) => v.id))) {
    if (days.length % HISTORY_SLICE === 0) await yieldToOthers();
    const verdicts = dayVerdicts(historyEvent, roleOf.get(historyEvent.id)!, variants, control, totals);
    const controlArm = control && totals.get(control.id);
    days.push({
      day,
      variants: variants.map((variant) => {
        const arm = totals.get(variant.id)!;
        const isControl = variant.id === control?.id;
        const sequential = compareSequentially(arm, controlArm, isControl);
        return {
          variant: variant.key,
          participants: arm.participants,
          unique_conversions: arm.uniqueConversions,
          difference: sequential.difference,
          confidence_sequence: sequential.confidenceSequence,
          means_sequence: meansSequenceOf(historyEvent, () => compareMeansSequentially(arm, controlArm, isControl)),
          corrected_verdict: verdicts.get(variant.id) ?? null,
        };
      }),
    });
  }

  return {
    experiment: experiment.key,
    status: experiment.status,
    goal: goal.key,
    control: control?.key ?? null,
    participants: variants.reduce((sum, v) => sum + v.participants, 0),
    runtime: {
      started_at: isoOrNull(experiment.started_at),
      stopped_at: isoOrNull(experiment.stopped_at),
      days_running: daysRunning(isoOrNull(experiment.started_at), isoOrNull(experiment.stopped_at), now()),
    },
    srm,
    srm_warning: srm.p_value !== null && srm.p_value < SRM_WARNING_BELOW,
    method: { name: 'msprt_normal_mixture', alpha: 0.05, mixing_sd: DEPRECATED_MIXING_SD, means_effect_size: MIXING_EFFECT_SIZE, minimum_participants: MINIMUM_PARTICIPANTS },
    events: eventResults,
    history: { event: historyEvent.key, metric: judgedMetricOf(historyEvent), days },
  };
}

/** Days of history computed between two yields. */
const HISTORY_SLICE = 10;

const yieldToOthers = () => new Promise((resolve) => setImmediate(resolve));
