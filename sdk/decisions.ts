// Decisions from a cached config with the server's own evaluator (server/domain/): one experiment
// or one flag at a time, and, for a flag, the experiments its value depended on — the exposures
// to report.
import type { components } from '../generated/api';
import { experimentVariant } from '../server/domain/evaluation';
import { evaluateCondition } from '../server/domain/conditions';
import { evaluateFlag, isScheduled } from '../server/domain/flag-rules';

type Config = components['schemas']['Config'];
type ConfigExperiment = components['schemas']['ConfigExperiment'];
type ConfigFeature = components['schemas']['ConfigFeature'];
type Attributes = components['schemas']['Attributes'];

/** A config indexed by key, so that a decision looks up what it needs only. */
export interface IndexedConfig {
  config: Config;
  experiments: Map<string, ConfigExperiment>;
  features: Map<string, ConfigFeature>;
}

export function indexConfig(config: Config): IndexedConfig {
  return {
    config,
    experiments: new Map(config.experiments.map((experiment) => [experiment.key, experiment])),
    features: new Map(config.features.map((feature) => [feature.key, feature])),
  };
}

/** The variant key, or null when the experiment is not running or the participant is not in it. */
export function decideExperiment(indexed: IndexedConfig, key: string, participant: string, attributes: Attributes): string | null {
  const experiment = indexed.experiments.get(key);
  return experiment ? experimentVariant(experiment, participant, attributes) : null;
}

export interface FlagDecision {
  value: string | null;
  /** The experiments the participant is in whose rules the flag reached: what it was shown depended on them. */
  exposures: Array<{ experiment: string; variant: string }>;
}

/**
 * The flag's value, and its exposures: every experiment rule reached (up to the one that served,
 * or all of them when the flag's own value was served) whose schedule and conditions held and
 * that has the participant in its experiment — also when the participant's variant is not among
 * the rule's, since its value then came from that variant too; reporting treatment's exposures
 * only would bias the experiment.
 */
export function decideFeature(indexed: IndexedConfig, key: string, participant: string, attributes: Attributes, now: number): FlagDecision {
  const flag = indexed.features.get(key);
  if (!flag) return { value: null, exposures: [] };
  const variants = new Map<string, string | null | undefined>();
  const variantOf = (experimentKey: string) => {
    if (!variants.has(experimentKey)) {
      const experiment = indexed.experiments.get(experimentKey);
      variants.set(experimentKey, experiment ? experimentVariant(experiment, participant, attributes) : undefined);
    }
    return variants.get(experimentKey);
  };
  const evaluation = evaluateFlag(flag, { participant, attributes, now, variantOf });
  const exposures: FlagDecision['exposures'] = [];
  if (evaluation.reason === 'disabled') return { value: evaluation.value, exposures };
  const rules = flag.rules ?? [];
  const reached = evaluation.rule === null ? rules : rules.slice(0, evaluation.rule + 1);
  for (const rule of reached) {
    if (rule.type !== 'experiment' || !isScheduled(rule, now)) continue;
    if (rule.conditions && !evaluateCondition(rule.conditions, attributes)) continue;
    const variant = variantOf(rule.experiment);
    if (variant != null) exposures.push({ experiment: rule.experiment, variant });
  }
  return { value: evaluation.value, exposures };
}
