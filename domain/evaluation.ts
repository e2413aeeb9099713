/**
 * A whole team config evaluated for one participant: what `POST …/evaluate` answers and what
 * the package's `evaluateConfig` computes, from this one function.
 */
import type { components } from '../generated/api';
import { toHundredths } from './coverage';
import { placement } from './eligibility';
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
  const reasons: Evaluation['experiment_reasons'] = {};
  for (const experiment of config.experiments) {
    const decided = options.assignments && Object.hasOwn(options.assignments, experiment.key) ? options.assignments[experiment.key] : undefined;
    const placed = experimentPlacement(experiment, participant.key, attributes);
    const byRules = typeof placed === 'string' ? null : placed.key;
    experiments[experiment.key] = decided !== undefined ? decided : byRules;
    reasons[experiment.key] = decided === undefined ? (typeof placed === 'string' ? placed : 'assigned') : decided !== null ? 'enrolled' : typeof placed === 'string' ? placed : 'not_enrolled';
  }
  const context = {
    participant: participant.key,
    attributes,
    now: (options.now ?? new Date()).getTime(),
    variantOf: (key: string) => (Object.hasOwn(experiments, key) ? experiments[key] : undefined),
  };
  const features: Evaluation['features'] = {};
  for (const flag of config.features) features[flag.key] = evaluateFlag(flag, context);
  return { features, experiments, experiment_reasons: reasons };
}

/** The variant the experiment's published rules give the participant (eligibility.ts), or null. */
export function experimentVariant(experiment: ConfigExperiment, participant: string, attributes: Attributes): string | null {
  const placed = experimentPlacement(experiment, participant, attributes);
  return typeof placed === 'string' ? null : placed.key;
}

/** The variant the experiment's published rules give the participant, or why they give none. */
function experimentPlacement(experiment: ConfigExperiment, participant: string, attributes: Attributes) {
  const group = experiment.exclusion_group;
  const targeting = {
    seed: experiment.seed,
    hashVersion: experiment.hash_version,
    coverage: toHundredths(experiment.coverage),
    group: group && { key: group.key, start: toHundredths(group.start), end: toHundredths(group.end) },
    conditions: experiment.conditions,
  };
  return placement(targeting, { key: participant, attributes }, experiment.variants);
}
