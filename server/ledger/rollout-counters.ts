import type { RolloutArm } from '../../domain/rollout-arms';
import type { LedgerChange } from './change';
import { eventDelta } from './counters';

/** The counters of each rollout arm × guardrail event, as their columns in rollout_arm_event_counts are named. */
export const ARM_EVENT_COUNTERS = ['conversions', 'unique_conversions', 'sum_y', 'sum_y2'] as const;

export type ArmEventCounter = (typeof ARM_EVENT_COUNTERS)[number];

export interface ArmDelta {
  teamId: number;
  rolloutId: number;
  arm: RolloutArm;
  participants: number;
}

export interface ArmEventDelta {
  teamId: number;
  rolloutId: number;
  arm: RolloutArm;
  eventId: number;
  counters: Record<ArmEventCounter, bigint>;
}

/**
 * What a change moves in the rollouts' counters: a participant in its arm for each exposure it
 * adds, and for each guardrail conversion it moves, the conversions, unique conversions, Σy and
 * Σy² of the participant's capped y going from its total before to its total after — as an
 * experiment's variant counts them (counters.ts).
 */
export function rolloutCountersOf(change: LedgerChange): { arms: ArmDelta[]; events: ArmEventDelta[] } {
  const arms = new Map<string, ArmDelta>();
  for (const { teamId, rolloutId, arm } of change.rolloutExposures) {
    const key = `${rolloutId}:${arm}`;
    const delta = arms.get(key);
    if (delta) delta.participants += 1;
    else arms.set(key, { teamId, rolloutId, arm, participants: 1 });
  }
  const events = new Map<string, ArmEventDelta>();
  for (const move of change.rolloutConversions.values()) {
    const moved = eventDelta({ ...move, x: 0n });
    const key = `${move.rolloutId}:${move.arm}:${move.eventId}`;
    const delta = events.get(key);
    if (!delta) events.set(key, { teamId: move.teamId, rolloutId: move.rolloutId, arm: move.arm, eventId: move.eventId, counters: pick(moved) });
    else for (const column of ARM_EVENT_COUNTERS) delta.counters[column] += moved[column];
  }
  return { arms: [...arms.values()], events: [...events.values()] };
}

const pick = (moved: Record<ArmEventCounter, bigint>): Record<ArmEventCounter, bigint> => ({ conversions: moved.conversions, unique_conversions: moved.unique_conversions, sum_y: moved.sum_y, sum_y2: moved.sum_y2 });
