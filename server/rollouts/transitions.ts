import type { Updateable } from 'kysely';
import type { components } from '../../generated/api';
import type { ArmCounts, GuardrailReading } from '../../domain/rollout-decision';
import { record, type Change } from '../audit/service';
import * as features from '../features/store';
import type { Db } from '../storage/database';
import type { Database } from '../storage/schema';
import { now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import type { RolloutRow } from './store';

type Rollout = components['schemas']['Rollout'];
type RolloutChanges = Updateable<Database['rollouts']>;

/** A rollout moved to step `step`, which its history gains; the step's exposures start from `exposures`. */
export function advanced(rollout: RolloutRow, step: number, exposures: ArmCounts, at: string): RolloutChanges {
  const steps = JSON.parse(rollout.steps) as Rollout['steps'];
  const history = JSON.parse(rollout.history) as Rollout['history'];
  return { step, history: JSON.stringify([...history, { step, percentage: steps[step]!.percentage, at }]), step_exposures: JSON.stringify(exposures), hold: null, updated_at: at };
}

/** A released rollout stands at its last step (100 %), which its history gains. */
export function released(rollout: RolloutRow, at: string): RolloutChanges {
  const last = (JSON.parse(rollout.steps) as Rollout['steps']).length - 1;
  const { history } = advanced(rollout, last, JSON.parse(rollout.step_exposures) as ArmCounts, at);
  return { state: 'released', step: last, history, hold: null, updated_at: at };
}

/** Rolled back, by hand or because a guardrail was harmed (its reading then says by how much). */
export function rolledBack(at: string, harmed?: { event: string; reading: GuardrailReading }): RolloutChanges {
  const rollback = harmed
    ? { reason: 'guardrail', at, event: harmed.event, effect: harmed.reading.difference, interval: harmed.reading.interval && [harmed.reading.interval.lower, harmed.reading.interval.upper] }
    : { reason: 'manual', at, event: null, effect: null, interval: null };
  return { state: 'rolled_back', rollback: JSON.stringify(rollback), hold: null, updated_at: at };
}

/** Releasing sets the flag's value to the rollout's, audited as the flag's update. */
export async function releaseValue(trx: Db, team: Pick<TeamRow, 'id'>, feature: features.FeatureRow, value: string | null, change: Change): Promise<void> {
  const updated = (await features.updateFeature(trx, feature.id, team.id, { value, updated_at: now() }))!;
  await record(trx, team.id, change, { resource: 'flag', key: feature.key, action: 'updated', before: features.toFeature(feature), after: features.toFeature(updated) });
}
