import type { Generated } from 'kysely';
import type { RolloutArm } from '../../domain/rollout-arms';
import type { ExactSum, Timestamp } from './columns';

/** The safe rollouts' tables (migrations 024 and 025). */
export interface RolloutTables {
  rollouts: {
    id: Generated<number>;
    team_id: number;
    feature_id: number;
    /** 1, 2, … per flag. */
    number: number;
    state: 'running' | 'paused' | 'rolled_back' | 'released';
    value: string | null;
    /** JSON text of the rollout's conditions, guardrails, steps and history; `rollback` JSON or null. */
    conditions: string;
    guardrails: string;
    steps: string;
    significance: number;
    step: number;
    seed: string;
    history: string;
    rollback: string | null;
    /** JSON `{"new": n, "current": m}`: each arm's exposures when the current step began. */
    step_exposures: Generated<string>;
    /** JSON `{"since": …, "sample_ratio_p_value": p}` while the sample-ratio check holds the rollout; null otherwise. */
    hold: string | null;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  /** Who was exposed to a rollout, in the arm of their first exposure. */
  rollout_exposures: {
    team_id: number;
    rollout_id: number;
    participant_id: number;
    arm: RolloutArm;
    exposed_at: Timestamp;
  };
  /** An exposed participant's conversions of a rollout's guardrail event since its exposure. */
  rollout_conversions: {
    team_id: number;
    rollout_id: number;
    participant_id: number;
    event_id: number;
    count: number;
    /** The sum of the values its events carried, in micro-units. */
    value: ExactSum;
  };
  rollout_arm_counts: {
    team_id: number;
    rollout_id: number;
    arm: RolloutArm;
    participants: number;
  };
  rollout_arm_event_counts: {
    team_id: number;
    rollout_id: number;
    arm: RolloutArm;
    event_id: number;
    conversions: number;
    unique_conversions: number;
    /** Σy and Σy² of the exposed participants' capped totals, in micro-units. */
    sum_y: ExactSum;
    sum_y2: ExactSum;
  };
}
