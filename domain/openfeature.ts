/**
 * A flag's decision told in OpenFeature's terms (reason, variant, metadata), as the package's
 * OpenFeature providers and the OFREP endpoints answer it (OFREP's answers are the same but for
 * DEFAULT, which OFREP 0.3.0 does not list: `ofrepReason` tells it as UNKNOWN):
 * - DISABLED: a disabled flag (no value: the application's default is served, no variant);
 * - TARGETING_MATCH: a force rule served (variant `rule_{index}`);
 * - SPLIT: a rollout rule (variant `rule_{index}`), an experiment rule (variant: the
 *   participant's variant key; metadata: `experiment`, the experiment's key) or the flag's safe
 *   rollout (variant `rollout_new` or `rollout_current`, the participant's arm) served;
 * - STATIC: the flag's own value, from a flag with no rule in force (none, or none whose schedule
 *   includes the moment) — every participant gets it now (variant `default`);
 * - DEFAULT: the flag's own value, because no rule applied to this participant (variant `default`).
 */
import type { components } from '../generated/api';
import { isScheduled, type FlagOutcome } from './flag-rules';

type Flag = components['schemas']['ConfigFeature'];

export type OpenFeatureReason = 'DISABLED' | 'TARGETING_MATCH' | 'SPLIT' | 'STATIC' | 'DEFAULT';

export interface OpenFeatureResolution {
  readonly reason: OpenFeatureReason;
  readonly variant?: string;
  readonly metadata?: { readonly experiment: string };
}

/** The variant name of what a flag's own value serves. */
export const DEFAULT_VARIANT = 'default';

// The resolutions that do not depend on the participant are shared (read-only), and a rule's
// variant name is made once per index: a provider resolves a flag for every evaluation.
const DISABLED: OpenFeatureResolution = { reason: 'DISABLED' };
const ARMS: Record<'new' | 'current', OpenFeatureResolution> = { new: { reason: 'SPLIT', variant: 'rollout_new' }, current: { reason: 'SPLIT', variant: 'rollout_current' } };
const STATIC: OpenFeatureResolution = { reason: 'STATIC', variant: DEFAULT_VARIANT };
const RULES_MISSED: OpenFeatureResolution = { reason: 'DEFAULT', variant: DEFAULT_VARIANT };
const ruleVariants: string[] = [];
const ruleVariant = (index: number) => (ruleVariants[index] = `rule_${index}`);

/** `now` is the moment the flag was decided at; without it the clock is read, and only if a rule has a schedule. */
export function openFeatureResolution(flag: Flag, outcome: Pick<FlagOutcome, 'reason' | 'rule'> & { rolloutArm?: 'new' | 'current' }, experiment: { key: string; variant: string } | undefined, now?: number): OpenFeatureResolution {
  if (outcome.reason === 'disabled') return DISABLED;
  if (outcome.reason === 'rollout' && outcome.rolloutArm) return ARMS[outcome.rolloutArm];
  const rules = flag.rules ?? [];
  if (outcome.reason === 'default' || outcome.rule === null) return anyRuleInForce(rules, now) ? RULES_MISSED : STATIC;
  const rule = rules[outcome.rule];
  if (rule?.type === 'experiment' && experiment) return { reason: 'SPLIT', variant: experiment.variant, metadata: { experiment: experiment.key } };
  return { reason: rule?.type === 'force' ? 'TARGETING_MATCH' : 'SPLIT', variant: ruleVariants[outcome.rule] ?? ruleVariant(outcome.rule) };
}

function anyRuleInForce(rules: NonNullable<Flag['rules']>, now: number | undefined): boolean {
  for (const rule of rules) {
    if ((rule.starts_at == null && rule.ends_at == null) || isScheduled(rule, now ?? Date.now())) return true;
  }
  return false;
}

export type OfrepReason = Exclude<OpenFeatureReason, 'DEFAULT'> | 'UNKNOWN';

/** The reason as OFREP 0.3.0 lists reasons: it has no DEFAULT, so rules that all missed are UNKNOWN. */
export function ofrepReason(reason: OpenFeatureReason): OfrepReason {
  return reason === 'DEFAULT' ? 'UNKNOWN' : reason;
}
