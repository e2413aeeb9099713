import { rolloutArm, type RolloutArm } from '../../domain/rollout-arms';

/**
 * The first `count` of `${prefix}-0`, `${prefix}-1`, … that the rollout's seed puts in `arm` at
 * `share` — arms of chosen sizes, where a random seed's own split of a fixed list may be uneven
 * enough for a check to hold the rollout (sample-ratio mismatch).
 */
export function participantsInArm(seed: string, share: number, arm: RolloutArm, count: number, prefix: string): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i++) {
    const participant = `${prefix}-${i}`;
    if (rolloutArm(seed, participant, share) === arm) found.push(participant);
  }
  return found;
}
