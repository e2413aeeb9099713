import type { components } from '../../generated/api';
import { compareSequentially, cumulativeDays, daysRunning, MINIMUM_PARTICIPANTS, SRM_WARNING_BELOW, type DailyChange } from '../domain/results';
import { MIXING_SD } from '../domain/sequential';
import type { ArmCounts } from '../domain/statistics';
import { requireExperiment } from '../experiments/service';
import type { ExperimentRow } from '../experiments/store';
import { NotFound } from '../http/errors';
import { eventsByKey } from '../events/store';
import type { Db } from '../storage/database';
import { inSnapshot } from '../storage/snapshot';
import { isoOrNull, now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { eventStatistics, experimentSrm } from '../variants/statistics';
import { eventCountsOf, variantsOf, type ResolvedVariant } from '../variants/store';
import { dailyChangesOf } from './store';

type ExperimentResults = components['schemas']['ExperimentResults'];
type EventResults = components['schemas']['EventResults'];
type EventType = components['schemas']['EventType'];

interface EventRow {
  id: number;
  key: string;
  type: EventType;
}

/** Reads the experiment's counters and its daily roll-up from one snapshot, then describes them. */
export async function experimentResults(db: Db, team: TeamRow, experimentKey: string, historyEventKey?: string): Promise<ExperimentResults> {
  const read = await inSnapshot(db, async (snapshot) => {
    const experiment = await requireExperiment(snapshot, team, experimentKey);
    const variants = await variantsOf(snapshot, team.id, experiment.id);
    const events: EventRow[] = await eventsByKey(snapshot, team.id);
    const historyEvent = historyEventKey === undefined ? events.find((e) => e.id === experiment.event_id) : events.find((e) => e.key === historyEventKey);
    if (!historyEvent) throw new NotFound(`No event '${historyEventKey}' in team ${team.id}.`);
    const variantIds = variants.map((v) => v.id);
    const counts = await eventCountsOf(snapshot, team.id, variantIds);
    const daily = await dailyChangesOf(snapshot, team.id, variantIds, historyEvent.id);
    return { experiment, variants, events, historyEvent, counts, daily };
  });
  // Computed once the snapshot is let go: on SQLite it holds the one connection.
  return describe(read.experiment, ordered(read.variants), read.events, read.counts, read.historyEvent, dailyChanges(read.daily));
}

/** The control first, then by key. */
function ordered(variants: ResolvedVariant[]): ResolvedVariant[] {
  return [...variants].sort((a, b) => Number(Boolean(b.control)) - Number(Boolean(a.control)) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

function dailyChanges(daily: Awaited<ReturnType<typeof dailyChangesOf>>): DailyChange[] {
  return [
    ...daily.participants.map((row) => ({ variantId: row.variant_id, day: row.day, participants: row.participants, uniqueConversions: 0 })),
    ...daily.conversions.map((row) => ({ variantId: row.variant_id, day: row.day, participants: 0, uniqueConversions: row.unique_conversions })),
  ];
}

type Counts = Awaited<ReturnType<typeof eventCountsOf>>;

function describe(experiment: ExperimentRow, variants: ResolvedVariant[], events: EventRow[], counts: Counts, historyEvent: EventRow, changes: DailyChange[]): ExperimentResults {
  const control = variants.find((v) => Boolean(v.control));
  const countOf = new Map(counts.map((count) => [`${count.variant_id}:${count.event_id}`, count]));
  const armOn = (arm: ResolvedVariant, eventId: number): ArmCounts => {
    const row = countOf.get(`${arm.id}:${eventId}`);
    return { participants: arm.participants, conversions: row?.conversions ?? 0, uniqueConversions: row?.unique_conversions ?? 0 };
  };
  const goal = events.find((e) => e.id === experiment.event_id)!;
  const goalFirst = [goal, ...events.filter((e) => e.id !== goal.id)];
  const srm = experimentSrm(variants);

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
    method: { name: 'msprt_normal_mixture', alpha: 0.05, mixing_sd: MIXING_SD, minimum_participants: MINIMUM_PARTICIPANTS },
    events: goalFirst.map((event): EventResults => ({
      event: event.key,
      type: event.type,
      goal: event.id === goal.id,
      variants: variants.map((variant) => {
        const arm = armOn(variant, event.id);
        const controlArm = control && armOn(control, event.id);
        const isControl = variant.id === control?.id;
        const sequential = compareSequentially(arm, controlArm, isControl);
        return {
          variant: variant.key,
          control: isControl,
          participants: variant.participants,
          statistics: eventStatistics(event, arm, controlArm ?? { participants: 0, conversions: 0, uniqueConversions: 0 }, isControl),
          difference: sequential.difference,
          confidence_sequence: sequential.confidenceSequence,
          verdict: sequential.verdict,
        };
      }),
    })),
    history: {
      event: historyEvent.key,
      days: cumulativeDays(changes, variants.map((v) => v.id)).map(({ day, totals }) => ({
        day,
        variants: variants.map((variant) => {
          const arm = totals.get(variant.id)!;
          const sequential = compareSequentially(arm, control && totals.get(control.id), variant.id === control?.id);
          return { variant: variant.key, participants: arm.participants, unique_conversions: arm.uniqueConversions, difference: sequential.difference, confidence_sequence: sequential.confidenceSequence };
        }),
      })),
    },
  };
}
