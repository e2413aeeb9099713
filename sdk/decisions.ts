// Decisions from a cached config with the server's own evaluator (domain/): one experiment
// or one flag at a time, and, for a flag, the experiments its value depended on — the exposures
// to report.
import type { components } from '../generated/api';
import { experimentVariant } from '../domain/evaluation';
import { decideFlag, hashedVariants } from '../domain/flag-decision';
import { readFlagValue, type TypedValue } from '../domain/flag-types';

type Config = components['schemas']['Config'];
type ConfigExperiment = components['schemas']['ConfigExperiment'];
type ConfigFeature = components['schemas']['ConfigFeature'];
type Attributes = components['schemas']['Attributes'];

/** A config indexed by key, so that a decision looks up what it needs only. */
export interface IndexedConfig {
  config: Config;
  experiments: Map<string, ConfigExperiment>;
  features: Map<string, ConfigFeature>;
  /** Each flag's values read as its type once, by their text: a decision only looks its value up. */
  typed: Map<string, Map<string | null, TypedValue | null>>;
}

export function indexConfig(config: Config): IndexedConfig {
  return {
    config,
    experiments: new Map(config.experiments.map((experiment) => [experiment.key, experiment])),
    features: new Map(config.features.map((feature) => [feature.key, feature])),
    typed: new Map(config.features.map((feature) => [feature.key, typedValues(feature)])),
  };
}

/** A value that does not read as the flag's type (the server refuses them) serves null. */
function typedValues(flag: ConfigFeature): Map<string | null, TypedValue | null> {
  const texts = [flag.value, ...(flag.rules ?? []).flatMap((rule) => (rule.type === 'experiment' ? Object.values(rule.variants) : [rule.value])), ...(flag.rollout ? [flag.rollout.value] : [])];
  return new Map(texts.map((text) => [text ?? null, readFlagValue(flag.type ?? 'string', text ?? null) ?? null]));
}

/** The variant key, or null when the experiment is not running or the participant is not in it. */
export function decideExperiment(indexed: IndexedConfig, key: string, participant: string, attributes: Attributes): string | null {
  const experiment = indexed.experiments.get(key);
  return experiment ? experimentVariant(experiment, participant, attributes) : null;
}

export interface FlagDecision {
  value: TypedValue | null;
  /** The value as the config keeps it, before it is read as the flag's type. */
  text: string | null;
  flag: ConfigFeature;
  /** Why: as `POST …/evaluate` answers it (disabled, the rule at `rule`, or the flag's own value). */
  reason: 'disabled' | 'rule' | 'rollout' | 'default';
  /** With reason `rollout`: the participant's arm of the flag's safe rollout (`new` is served its new value). */
  rolloutArm?: 'new' | 'current';
  rule: number | null;
  /** The variant of the experiment whose rule served the value, when one did. */
  variant?: { experiment: string; key: string };
  /** The experiments the participant is in whose rules the flag reached: what it was shown depended on them. */
  exposures: Array<{ experiment: string; variant: string }>;
}

/** The flag's value and its exposures (domain/flag-decision.ts), the value read as the flag's type. */
export function decideFeature(indexed: IndexedConfig, key: string, participant: string, attributes: Attributes, now: number): FlagDecision | undefined {
  const flag = indexed.features.get(key);
  if (!flag) return undefined;
  const variantOf = hashedVariants((experiment) => indexed.experiments.get(experiment), participant, attributes);
  const { outcome, variant, exposures } = decideFlag(flag, { participant, attributes, now, variantOf });
  const decision = { value: indexed.typed.get(key)!.get(outcome.value) ?? null, text: outcome.value, flag, reason: outcome.reason, rule: outcome.rule, ...(outcome.rollout_arm && { rolloutArm: outcome.rollout_arm }), exposures };
  return variant ? { ...decision, variant } : decision;
}
