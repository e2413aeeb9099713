import type { components } from '../../generated/api';
import { compareMeans, summarise, type MeanArm } from '../../domain/means';
import { minimumDetectableEffect, participantsNeededForRelative, rateArm } from '../../domain/power';
import type { Covariate } from '../../domain/estimate';
import { compareWithControl, sampleRatioMismatch, type ArmCounts } from '../../domain/statistics';
import { experimentNotFound } from '../experiments/service';
import { exact } from '../storage/exact-sums';
import type { ExperimentRow } from '../experiments/store';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { regressionAdjustment } from './regression-adjustment';
import { requireVariant } from './service';
import { statisticsInputs, type ResolvedVariant, type StatisticsInputs } from '../experiments/variants-store';

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

/** One arm on one event: its counts and the sums of its metric, in the event's units, and its exact sums of CUPED's covariate (micro-units). */
export type ArmTotals = ArmCounts & MeanArm & { covariate?: Covariate };

/**
 * Reads an arm's totals on an event from the counter rows (an absent row: nothing counted yet);
 * with `cuped` (the experiment's window is not 0), its pre-exposure sums too, which the
 * adjustment and the always-valid figures then use.
 */
export function armTotalsOf(counts: Counts, cuped: boolean): (arm: { id: number; participants: number } | undefined, eventId: number) => ArmTotals {
  const countOf = new Map(counts.map((count) => [`${count.variant_id}:${count.event_id}`, count]));
  return (arm, eventId) => {
    const row = arm && countOf.get(`${arm.id}:${eventId}`);
    const participants = arm?.participants ?? 0;
    return {
      participants,
      conversions: row?.conversions ?? 0,
      uniqueConversions: row?.unique_conversions ?? 0,
      // Kept exactly in micro-units (Σy²: micro-units squared): read as the nearest doubles, and exactly for the variance.
      sum: row ? Number(row.sum_y) / 1e6 : 0,
      sumOfSquares: row ? Number(row.sum_y2) / 1e12 : 0,
      micros: { sum: exact(row?.sum_y), sumOfSquares: exact(row?.sum_y2) },
      ...(cuped && { covariate: { sumX: exact(row?.sum_x), sumX2: exact(row?.sum_x2), sumXY: exact(row?.sum_xy) } }),
    };
  };
}

function describe(experiment: ExperimentRow, variants: ResolvedVariant[], variant: ResolvedVariant, control: ResolvedVariant | undefined, events: Events, counts: Counts): VariantStatistics {
  const armOn = armTotalsOf(counts, experiment.pre_exposure_days > 0);
  const goalFirst = [...events.filter((e) => e.id === experiment.event_id), ...events.filter((e) => e.id !== experiment.event_id)];

  return {
    experiment: experiment.key,
    variant: variant.key,
    control: control?.key ?? null,
    participants: variant.participants,
    srm: experimentSrm(variants),
    events: goalFirst.map((event) => eventStatistics(event, armOn(variant, event.id), armOn(control, event.id), variant.id === control?.id, experiment)),
  };
}

/** The experiment's sample-ratio check; a variant with a 0 % share and participants is a mismatch. */
export function experimentSrm(variants: ResolvedVariant[]): VariantStatistics['srm'] {
  const srm = sampleRatioMismatch(
    variants.map((v) => v.participants),
    variants.map((v) => v.share),
  );
  return { chi_square: srm?.chiSquare ?? null, p_value: srm?.pValue ?? null };
}

/** The fixed-horizon figures of one arm against the control on one event, and the planning ones for the experiment's minimum effect. */
export function eventStatistics(event: { key: string; type: EventStatistics['type'] }, arm: ArmTotals, control: ArmTotals, isControl: boolean, experiment: Pick<ExperimentRow, 'minimum_effect' | 'pre_exposure_days'>): EventStatistics {
  const minimumEffect = experiment.minimum_effect;
  const comparison = compareWithControl(arm, control, isControl);
  const controlRate = rateArm(control);
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
    test: comparison.test,
    minimum_detectable_effect: comparison.minimumDetectableEffect,
    participants_needed: isControl ? null : participantsNeededForRelative(rateArm(arm), controlRate, controlRate.rate, minimumEffect),
    means: event.type === 'unique' ? null : meanStatistics(arm, control, isControl, minimumEffect),
    regression_adjustment: isControl ? null : regressionAdjustment(event.type, arm, control, experiment.pre_exposure_days),
  };
}

/** The means figures of a count or value event (MeanStatistics); comparisons null for the control. */
function meanStatistics(arm: MeanArm, control: MeanArm, isControl: boolean, minimumEffect: number | null): NonNullable<EventStatistics['means']> {
  const own = summarise(arm);
  const controlSummary = summarise(control);
  const comparison = isControl ? null : compareMeans(arm, control);
  return {
    mean: own?.mean ?? null,
    variance: own?.variance ?? null,
    control_mean: controlSummary?.mean ?? null,
    difference: comparison?.difference ?? null,
    standard_error: comparison?.standardError ?? null,
    degrees_of_freedom: comparison?.degreesOfFreedom ?? null,
    p_value: comparison?.pValue ?? null,
    difference_interval: comparison?.interval ?? null,
    relative_uplift: comparison?.relativeUplift ?? null,
    relative_standard_error: comparison?.relativeStandardError ?? null,
    relative_p_value: comparison?.relativePValue ?? null,
    relative_interval: comparison?.relativeInterval ?? null,
    chance_to_beat_control: comparison?.chanceToBeatControl ?? null,
    relative_chance_to_beat_control: comparison?.relativeChanceToBeatControl ?? null,
    minimum_detectable_effect: minimumDetectableEffect(comparison?.standardError ?? null),
    participants_needed: comparison
      ? participantsNeededForRelative({ participants: arm.participants, variance: own!.variance }, { participants: control.participants, variance: controlSummary!.variance }, controlSummary!.mean, minimumEffect)
      : null,
  };
}
