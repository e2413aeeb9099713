/**
 * Who enters an experiment, and with which variant — pure, from the published rules of
 * conditions/, exclusion-groups.ts, coverage.ts and assignment.ts. A participant enters a
 * running experiment when its attributes match the experiment's conditions, its group position
 * lies in the experiment's range (if it has an exclusion group), and its coverage position lies
 * inside the coverage; it then gets the variant of its bucket. The checks run in that order,
 * each hash only when the checks before it passed.
 */
import { assignmentDigest, bucketOfDigest, chooseVariant, type HashVersion } from './assignment';
import { evaluateCondition, type Condition, type ConditionAttributes } from './conditions';
import { coveragePositionOfDigest, isCovered } from './coverage';
import { groupPosition, isInRange, type GroupRange } from './exclusion-groups';

/** What decides entry to an experiment: coverage and group range in hundredths of a percent; `{}` conditions hold for everyone. */
export interface Targeting {
  seed: string;
  hashVersion: HashVersion;
  coverage: number;
  group: GroupRange | null;
  conditions: Condition;
}

export interface Candidate {
  key: string;
  attributes: ConditionAttributes;
}

/** Why a participant does not enter: the first check it failed, in the order they run. */
export type Refusal = 'conditions' | 'exclusion_group' | 'coverage';

/** Whether the participant qualifies: its attributes match, and it is inside its group range (if any) and the coverage. */
export function admits(targeting: Targeting, participant: Candidate): boolean {
  return admission(targeting, participant) instanceof Uint8Array;
}

/** The variant a qualifying participant gets, or null when it does not qualify or no variant takes its bucket. */
export function placeParticipant<V extends { traffic: number }>(targeting: Targeting, participant: Candidate, variants: readonly V[]): V | null {
  const placed = placement(targeting, participant, variants);
  return typeof placed === 'string' ? null : placed;
}

/** The variant a qualifying participant gets; else why it gets none (`no_variant`: no variant takes its bucket). */
export function placement<V extends { traffic: number }>(targeting: Targeting, participant: Candidate, variants: readonly V[]): V | Refusal | 'no_variant' {
  const digest = admission(targeting, participant);
  if (typeof digest === 'string') return digest;
  return chooseVariant(variants, bucketOfDigest(digest, targeting.hashVersion), targeting.hashVersion) ?? 'no_variant';
}

/** The participant's assignment digest when it qualifies, else the check it failed. */
function admission(targeting: Targeting, participant: Candidate): Uint8Array | Refusal {
  if (!isEverybody(targeting.conditions) && !evaluateCondition(targeting.conditions, participant.attributes)) return 'conditions';
  if (targeting.group && !isInRange(groupPosition(targeting.group.key, participant.key), targeting.group)) return 'exclusion_group';
  const digest = assignmentDigest(targeting.seed, participant.key);
  return isCovered(coveragePositionOfDigest(digest), targeting.coverage) ? digest : 'coverage';
}

/** `{}`: the condition that holds for everyone, skipped without evaluating. */
export function isEverybody(condition: Condition): boolean {
  for (const _ in condition) return false;
  return true;
}
