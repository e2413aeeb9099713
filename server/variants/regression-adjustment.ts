import type { components } from '../../generated/api';
import { compareAdjusted } from '../../domain/cuped';
import { adjustedArmOf, type ComparedArm } from '../../domain/estimate';

type RegressionAdjustment = components['schemas']['RegressionAdjustment'];
type EventType = components['schemas']['EventType'];

/** The comparison adjusted on the arms' pre-exposure sums (RegressionAdjustment); null when the window is 0 or the adjustment does not apply. */
export function regressionAdjustment(type: EventType, arm: ComparedArm, control: ComparedArm, preExposureDays: number): RegressionAdjustment {
  if (preExposureDays === 0) return null;
  const metric = type === 'unique' ? 'rate' : 'mean';
  const [adjusted, adjustedControl] = [adjustedArmOf(arm, metric), adjustedArmOf(control, metric)];
  const comparison = adjusted && adjustedControl && compareAdjusted(adjusted, adjustedControl, metric === 'rate' ? 'proportion' : 'mean');
  if (!comparison) return null;
  return {
    pre_exposure_days: preExposureDays,
    theta: comparison.theta,
    difference: comparison.difference,
    standard_error: comparison.standardError,
    degrees_of_freedom: comparison.degreesOfFreedom,
    p_value: comparison.pValue,
    difference_interval: comparison.interval,
    relative_uplift: comparison.relativeUplift,
    relative_standard_error: comparison.relativeStandardError,
    relative_p_value: comparison.relativePValue,
    relative_interval: comparison.relativeInterval,
    chance_to_beat_control: comparison.chanceToBeatControl,
    unadjusted_standard_error: Math.sqrt(comparison.unadjustedVariance),
    variance_reduction: comparison.varianceReduction,
  };
}
