import type { components } from '../../generated/api';
import type { RoleArm } from '../../domain/roles';
import type { RolloutArm } from '../../domain/rollout-arms';
import { decideRollout, type ArmCounts, type RolloutCheck, type RolloutDecision } from '../../domain/rollout-decision';
import type { Db } from '../storage/database';
import { exact } from '../storage/exact-sums';
import type { RolloutRow } from './store';

type Rollout = components['schemas']['Rollout'];
type RolloutReading = components['schemas']['RolloutReading'];

/** A rollout's live counters (what the ledger keeps): exposures per arm, and each guardrail's arms on its metric. */
export interface RolloutCounters {
  exposures: ArmCounts;
  guardrails: Array<{ event: string; metric: 'rate' | 'mean'; direction: 'increase' | 'decrease'; arms: Record<RolloutArm, RoleArm> }>;
}

/** Three reads of O(arms × guardrails) rows, whatever the exposures. */
export async function readCounters(db: Db, rollout: Pick<RolloutRow, 'id' | 'team_id' | 'guardrails'>): Promise<RolloutCounters> {
  const guardrails = JSON.parse(rollout.guardrails) as Rollout['guardrails'];
  const exposures = { new: 0, current: 0 };
  for (const row of await db.selectFrom('rollout_arm_counts').select(['arm', 'participants']).where('rollout_id', '=', rollout.id).execute()) exposures[row.arm] = Number(row.participants);
  const keys = guardrails.map((guardrail) => guardrail.event);
  const events = keys.length === 0 ? [] : await db.selectFrom('events').select(['id', 'key', 'type']).where('team_id', '=', rollout.team_id).where('key', 'in', keys).execute();
  const counts = keys.length === 0 ? [] : await db.selectFrom('rollout_arm_event_counts').selectAll().where('rollout_id', '=', rollout.id).execute();
  return {
    exposures,
    guardrails: guardrails.map((guardrail) => {
      const event = events.find((candidate) => candidate.key === guardrail.event);
      const armOf = (arm: RolloutArm): RoleArm => {
        const row = event && counts.find((count) => count.arm === arm && Number(count.event_id) === Number(event.id));
        return {
          participants: exposures[arm],
          uniqueConversions: Number(row?.unique_conversions ?? 0),
          sum: row ? Number(row.sum_y) / 1e6 : 0,
          sumOfSquares: row ? Number(row.sum_y2) / 1e12 : 0,
          micros: { sum: exact(row?.sum_y), sumOfSquares: exact(row?.sum_y2) },
        };
      };
      return { event: guardrail.event, metric: event?.type === 'unique' || !event ? 'rate' : 'mean', direction: guardrail.direction, arms: { new: armOf('new'), current: armOf('current') } };
    }),
  };
}

/** What a check of the rollout decides at `now` (domain/rollout-decision.ts). */
export function decide(rollout: RolloutRow, counters: RolloutCounters, now: number): RolloutDecision {
  return decideRollout(checkOf(rollout, counters, now));
}

function checkOf(rollout: RolloutRow, counters: RolloutCounters, now: number): RolloutCheck {
  const steps = (JSON.parse(rollout.steps) as Rollout['steps']).map((step) => ({ percentage: step.percentage, holdSeconds: step.hold_seconds, minimumExposures: step.minimum_exposures }));
  const history = JSON.parse(rollout.history) as Rollout['history'];
  return {
    steps,
    guardrails: counters.guardrails.map(({ direction, metric }) => ({ direction, metric })),
    alpha: Number(rollout.significance),
    step: rollout.step,
    stepStartedAt: Date.parse(history[history.length - 1]!.at),
    now,
    paused: rollout.state === 'paused',
    exposures: counters.exposures,
    exposuresAtStepStart: JSON.parse(rollout.step_exposures) as ArmCounts,
    arms: counters.guardrails.map((guardrail) => guardrail.arms),
  };
}

/** What a rollout's answer says of its counters now: exposures per arm, and each guardrail as the check reads it. */
export async function observe(db: Db, rollout: RolloutRow): Promise<Observed> {
  const counters = await readCounters(db, rollout);
  return { exposures: counters.exposures, readings: readingsOf(counters, decide(rollout, counters, Date.now())) };
}

export type Observed = Pick<Rollout, 'exposures' | 'readings'>;

/** Each guardrail as the contract reads it (RolloutReading). */
export function readingsOf(counters: RolloutCounters, decision: RolloutDecision): RolloutReading[] {
  return counters.guardrails.map((guardrail, i) => {
    const reading = decision.guardrails[i]!;
    const meanOf = (arm: RoleArm) => (arm.participants === 0 ? null : (guardrail.metric === 'rate' ? arm.uniqueConversions : (arm.sum ?? 0)) / arm.participants);
    return {
      event: guardrail.event,
      metric: guardrail.metric,
      new: { participants: guardrail.arms.new.participants, mean: meanOf(guardrail.arms.new) },
      current: { participants: guardrail.arms.current.participants, mean: meanOf(guardrail.arms.current) },
      difference: reading.difference,
      interval: reading.interval && [reading.interval.lower, reading.interval.upper],
      p_value: reading.pValue,
      adjusted_p_value: reading.adjustedPValue,
      harmed: reading.harmed,
    };
  });
}
