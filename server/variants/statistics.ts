import type { components } from '../../generated/api';
import { compareWithControl, sampleRatioMismatch, type ArmCounts } from '../domain/statistics';
import { experimentNotFound } from '../experiments/service';
import type { ExperimentRow } from '../experiments/store';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { requireVariant } from './service';
import { statisticsInputs, type ResolvedVariant, type StatisticsInputs } from './store';

type VariantStatistics = components['schemas']['VariantStatistics'];
type EventStatistics = components['schemas']['EventStatistics'];

/**
 * Reads only maintained counters, all in one statement — one snapshot, so that no ingest
 * committing meanwhile makes them disagree: O(variants + events), whatever the number of
 * recorded events.
 */
export async function variantStatistics(db: Db, team: TeamRow, experimentKey: string, variantKey: string): Promise<VariantStatistics> {
  const read = await statisticsInputs(db, team.id, experimentKey, variantKey);
  if (!read) throw experimentNotFound(team, experimentKey);
  const variant = requireVariant(read.variants, read.experiment, variantKey);
  const control = read.variants.find((candidate) => Boolean(candidate.control));
  return describe(read.experiment, read.variants, variant, control, read.events, read.counts);
}

type Events = Array<{ id: number; key: string; type: EventStatistics['type'] }>;
type Counts = StatisticsInputs['counts'];

function describe(experiment: ExperimentRow, variants: ResolvedVariant[], variant: ResolvedVariant, control: ResolvedVariant | undefined, events: Events, counts: Counts): VariantStatistics {
  const countOf = new Map(counts.map((count) => [`${count.variant_id}:${count.event_id}`, count]));
  const armOn = (arm: ResolvedVariant | undefined, eventId: number): ArmCounts => {
    const row = arm && countOf.get(`${arm.id}:${eventId}`);
    return { participants: arm?.participants ?? 0, conversions: row?.conversions ?? 0, uniqueConversions: row?.unique_conversions ?? 0 };
  };
  const goalFirst = [...events.filter((e) => e.id === experiment.event_id), ...events.filter((e) => e.id !== experiment.event_id)];

  return {
    experiment: experiment.key,
    variant: variant.key,
    control: control?.key ?? null,
    participants: variant.participants,
    srm: experimentSrm(variants),
    events: goalFirst.map((event) => eventStatistics(event, armOn(variant, event.id), armOn(control, event.id), variant.id === control?.id)),
  };
}

/** The experiment's sample-ratio check; variants with a 0 % share are left out. */
export function experimentSrm(variants: ResolvedVariant[]): VariantStatistics['srm'] {
  const split = variants.filter((v) => v.share > 0);
  const srm = sampleRatioMismatch(
    split.map((v) => v.participants),
    split.map((v) => v.share),
  );
  return { chi_square: srm?.chiSquare ?? null, p_value: srm?.pValue ?? null };
}

/** The fixed-horizon figures of one arm against the control on one event. */
export function eventStatistics(event: { key: string; type: EventStatistics['type'] }, arm: ArmCounts, control: ArmCounts, isControl: boolean): EventStatistics {
  const comparison = compareWithControl(arm, control, isControl);
  return {
    event: event.key,
    type: event.type,
    conversions: arm.conversions,
    unique_conversions: arm.uniqueConversions,
    count_conversion_rate: comparison.countConversionRate,
    unique_conversion_rate: comparison.uniqueConversionRate,
    uplift: comparison.uplift,
    z_score: comparison.zScore,
    p_value: comparison.pValue,
    confidence: comparison.confidence,
    power: comparison.power,
    conversion_rate_interval: comparison.conversionRateInterval,
    difference_interval: comparison.differenceInterval,
    chance_to_beat_control: comparison.chanceToBeatControl,
  };
}
