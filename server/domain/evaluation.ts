/**
 * A whole team config evaluated for one participant: what `POST …/evaluate` answers and what
 * the package's `evaluateConfig` computes, from this one function.
 */
import type { components } from '../../generated/api';
import { toHundredths } from './coverage';
import { placeParticipant } from './eligibility';
import { evaluateFlag } from './flag-rules';

type Config = components['schemas']['Config'];
type ConfigExperiment = components['schemas']['ConfigExperiment'];
type Attributes = components['schemas']['Attributes'];
type Evaluation = components['schemas']['Evaluation'];

export interface EvaluatedParticipant {
  key: string;
  attributes?: Attributes;
}

export interface EvaluationOptions {
  /** The moment schedules are judged at; now when not given. */
  now?: Date;
  /** Variants already decided (stored assignments), by experiment key; they win over the hash. */
  assignments?: Readonly<Record<string, string | null>>;
}

export function evaluateConfig(config: Config, participant: EvaluatedParticipant, options: EvaluationOptions = {}): Evaluation {
  const attributes = participant.attributes ?? {};
  const experiments: Evaluation['experiments'] = {};
  for (const experiment of config.experiments) {
    const decided = options.assignments && Object.hasOwn(options.assignments, experiment.key) ? options.assignments[experiment.key] : undefined;
    experiments[experiment.key] = decided !== undefined ? decided : experimentVariant(experiment, participant.key, attributes);
  }
  const context = {
    participant: participant.key,
    attributes,
    now: (options.now ?? new Date()).getTime(),
    variantOf: (key: string) => (Object.hasOwn(experiments, key) ? experiments[key] : undefined),
  };
  const features: Evaluation['features'] = {};
  for (const flag of config.features) features[flag.key] = evaluateFlag(flag, context);
  return { features, experiments };
}

/** The variant the experiment's published rules give the participant (eligibility.ts), or null. */
export function experimentVariant(experiment: ConfigExperiment, participant: string, attributes: Attributes): string | null {
  const group = experiment.exclusion_group;
  const targeting = {
    seed: experiment.seed,
    hashVersion: experiment.hash_version,
    coverage: toHundredths(experiment.coverage),
    group: group && { key: group.key, start: toHundredths(group.start), end: toHundredths(group.end) },
    conditions: experiment.conditions,
  };
  return placeParticipant(targeting, { key: participant, attributes }, experiment.variants)?.key ?? null;
}
