/**
 * One flag decided for one participant, with what the decision depended on: the experiment
 * variant that served it, and the exposures to report — what the package's SDK and the OFREP
 * single-flag evaluation both record, from this one function.
 */
import type { components } from '../generated/api';
import { evaluateCondition } from './conditions';
import { experimentVariant } from './evaluation';
import { evaluateFlag, isScheduled, type FlagContext, type FlagOutcome } from './flag-rules';

type ConfigExperiment = components['schemas']['ConfigExperiment'];
type ConfigFeature = components['schemas']['ConfigFeature'];
type Attributes = components['schemas']['Attributes'];

export interface FlagDecision {
  outcome: FlagOutcome;
  /** The variant of the experiment whose rule served the value, when one did. */
  variant?: { experiment: string; key: string };
  /** The experiments the participant is in whose rules the flag reached: what it was shown depended on them. */
  exposures: Array<{ experiment: string; variant: string }>;
}

/**
 * The flag's outcome, and its exposures: every experiment rule reached (up to the one that served,
 * or all of them when the flag's own value was served) whose schedule and conditions held and
 * that has the participant in its experiment — also when the participant's variant is not among
 * the rule's, since its value then came from that variant too; reporting treatment's exposures
 * only would bias the experiment.
 */
export function decideFlag(flag: ConfigFeature, context: FlagContext): FlagDecision {
  const outcome = evaluateFlag(flag, context);
  const exposures: FlagDecision['exposures'] = [];
  if (outcome.reason === 'disabled') return { outcome, exposures };
  const rules = flag.rules ?? [];
  const reached = outcome.rule === null ? rules : rules.slice(0, outcome.rule + 1);
  for (const rule of reached) {
    if (rule.type !== 'experiment' || !isScheduled(rule, context.now)) continue;
    if (rule.conditions && !evaluateCondition(rule.conditions, context.attributes)) continue;
    const variant = context.variantOf(rule.experiment);
    if (variant != null) exposures.push({ experiment: rule.experiment, variant });
  }
  const served = outcome.rule === null ? undefined : rules[outcome.rule];
  return served?.type === 'experiment' ? { outcome, exposures, variant: { experiment: served.experiment, key: context.variantOf(served.experiment)! } } : { outcome, exposures };
}

/**
 * `variantOf` for a participant, by the experiments' published rules (hash), each experiment
 * placed once: undefined for an experiment that is not running, null when it gives no variant.
 */
export function hashedVariants(experimentOf: (key: string) => ConfigExperiment | undefined, participant: string, attributes: Attributes): (key: string) => string | null | undefined {
  const variants = new Map<string, string | null | undefined>();
  return (key) => {
    if (!variants.has(key)) {
      const experiment = experimentOf(key);
      variants.set(key, experiment ? experimentVariant(experiment, participant, attributes) : undefined);
    }
    return variants.get(key);
  };
}
