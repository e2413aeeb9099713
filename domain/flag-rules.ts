/**
 * What a flag serves a participant (the contract's FeatureRules): an enabled flag serves the
 * value of its first rule that applies; when none does, its safe rollout (the contract's
 * Rollout) decides for a participant in one of its arms; else the flag's own value. A disabled
 * flag serves null.
 */
import type { components } from '../generated/api';
import { sha256 } from '#sha256';
import { scaled } from './assignment';
import { evaluateCondition } from './conditions';
import { rolloutArm } from './rollout-arms';

type Flag = components['schemas']['ConfigFeature'];
type Rule = components['schemas']['FeatureRule'];
type Attributes = components['schemas']['Attributes'];
/** What a flag serves and why; the value as text (flag-types.ts reads it as the flag's type). */
export type FlagOutcome = components['schemas']['FeatureEvaluation'];

export const ROLLOUT_BUCKETS = 10_000;

export interface FlagContext {
  participant: string;
  attributes: Attributes;
  /** Milliseconds since the epoch: the moment schedules are judged at. */
  now: number;
  /** The variant the participant gets in a running experiment; undefined when it is not running. */
  variantOf(experiment: string): string | null | undefined;
}

export function evaluateFlag(flag: Flag, context: FlagContext): FlagOutcome {
  if (!flag.enabled) return { value: null, reason: 'disabled', rule: null };
  const rules = flag.rules ?? [];
  for (let index = 0; index < rules.length; index++) {
    const served = servedBy(rules[index]!, flag.key, context);
    if (served) return { value: served.value, reason: 'rule', rule: index };
  }
  return rolloutOutcome(flag, context) ?? { value: flag.value, reason: 'default', rule: null };
}

/** The flag's rollout in place of its fallthrough: the new value in the `new` arm, the flag's value in the `current` arm, undefined outside both. */
function rolloutOutcome(flag: Flag, context: FlagContext): FlagOutcome | undefined {
  const rollout = flag.rollout;
  if (!rollout) return undefined;
  if (rollout.conditions && !evaluateCondition(rollout.conditions, context.attributes)) return undefined;
  const arm = rolloutArm(rollout.seed, context.participant, rollout.share);
  if (arm === null) return undefined;
  return { value: arm === 'new' ? rollout.value : flag.value, reason: 'rollout', rule: null, rollout_arm: arm };
}

/** The value the rule serves the participant, or undefined when it does not apply. */
function servedBy(rule: Rule, flagKey: string, context: FlagContext): { value: string | null } | undefined {
  if (!isScheduled(rule, context.now)) return undefined;
  if (rule.conditions && !evaluateCondition(rule.conditions, context.attributes)) return undefined;
  switch (rule.type) {
    case 'force':
      return { value: rule.value };
    case 'rollout':
      return inRollout(flagKey, context.participant, rule.percentage) ? { value: rule.value } : undefined;
    case 'experiment': {
      const variant = context.variantOf(rule.experiment);
      return variant != null && Object.hasOwn(rule.variants, variant) ? { value: rule.variants[variant] ?? null } : undefined;
    }
  }
}

export function isScheduled(rule: Pick<Rule, 'starts_at' | 'ends_at'>, now: number): boolean {
  if (rule.starts_at != null && now < Date.parse(rule.starts_at)) return false;
  return rule.ends_at == null || now < Date.parse(rule.ends_at);
}

/**
 * Monotone in the percentage: the bucket depends on the flag and the participant only. `#`
 * cannot occur in a flag key, so the input never equals a variant digest's (`:`) or an exclusion
 * group's (`/`), even for a flag named like a seed or a group.
 */
export function rolloutBucket(flagKey: string, participant: string): number {
  return scaled(sha256(flagKey + '#' + participant), 0, ROLLOUT_BUCKETS);
}

export function inRollout(flagKey: string, participant: string, percentage: number): boolean {
  return rolloutBucket(flagKey, participant) < Math.round(percentage * 100);
}
