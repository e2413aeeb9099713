/**
 * OFREP's answer for one flag of a config (the contract's OfrepEvaluation): the shared decision
 * (domain/flag-decision.ts) told in OFREP's reasons, variants and metadata.
 */
import type { components } from '../../generated/api';
import { decideFlag, hashedVariants, type FlagDecision } from '../../domain/flag-decision';
import { readFlagValue } from '../../domain/flag-types';
import { ofrepReason, openFeatureResolution } from '../../domain/openfeature';
import { OfrepError } from '../contract/ofrep-failure';

type Config = components['schemas']['Config'];
type ConfigFeature = components['schemas']['ConfigFeature'];
type Attributes = components['schemas']['Attributes'];
type OfrepEvaluation = components['schemas']['OfrepEvaluation'];
type OfrepEvaluationFailure = components['schemas']['OfrepEvaluationFailure'];

/** What the context says: `targetingKey` the participant (possibly absent), the rest its attributes. */
export interface OfrepSubject {
  participant: string | undefined;
  attributes: Attributes;
}

/** A ParticipantKey (the contract's pattern): 1–255 characters, no whitespace, `/`, control characters or bidirectional marks. */
const PARTICIPANT_KEY = /^[^\s/\x00-\x1F\x7F-\x9F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]{1,255}$/u;

/** The context as a subject; a `targetingKey` that is no participant key is 400 INVALID_CONTEXT. */
export function subjectOf(context: components['schemas']['OfrepContext'] | undefined): OfrepSubject {
  const { targetingKey, ...attributes } = context ?? {};
  if (targetingKey !== undefined && (typeof targetingKey !== 'string' || !PARTICIPANT_KEY.test(targetingKey))) {
    throw new OfrepError(400, 'INVALID_CONTEXT', '/body/context/targetingKey must be a participant key: a string of 1–255 characters without whitespace, /, control characters or bidirectional marks');
  }
  return { participant: targetingKey, attributes: attributes as Attributes };
}

/** Thrown while deciding when the decision reads the participant and the context has none. */
class TargetingKeyMissing extends Error {}

export interface Decided {
  answer: OfrepEvaluation | OfrepEvaluationFailure;
  decision?: FlagDecision;
}

/**
 * The flag decided for the subject at `now`. `stored` are variants already decided (stored
 * assignments, by experiment key); they win over the hash. A decision that reads the
 * participant — a rollout, or a running experiment's rule — without one is TARGETING_KEY_MISSING.
 */
export function decideOfrep(config: Config, flag: ConfigFeature, subject: OfrepSubject, now: number, stored?: ReadonlyMap<string, string>): Decided {
  const { participant, attributes } = subject;
  const experimentOf = (key: string) => config.experiments.find((experiment) => experiment.key === key);
  const hashed = participant === undefined ? undefined : hashedVariants(experimentOf, participant, attributes);
  const variantOf = (key: string) => {
    if (stored?.has(key)) return stored.get(key);
    if (hashed) return hashed(key);
    if (experimentOf(key)) throw new TargetingKeyMissing();
    return undefined;
  };
  const context = {
    get participant(): string {
      if (participant === undefined) throw new TargetingKeyMissing();
      return participant;
    },
    attributes,
    now,
    variantOf,
  };
  try {
    const decision = decideFlag(flag, context);
    return { answer: toOfrep(flag, decision, now), decision };
  } catch (error) {
    if (!(error instanceof TargetingKeyMissing)) throw error;
    const errorDetails = `Flag '${flag.key}' reaches a rollout or experiment rule, which needs the participant: send context.targetingKey.`;
    return { answer: { key: flag.key, errorCode: 'TARGETING_KEY_MISSING', errorDetails } };
  }
}

/** The decision in OFREP's terms: the package's providers' resolution (domain/openfeature.ts), DEFAULT told as UNKNOWN. */
function toOfrep(flag: ConfigFeature, { outcome, variant }: FlagDecision, now: number): OfrepEvaluation {
  const arm = outcome.rollout_arm ? { rolloutArm: outcome.rollout_arm } : {};
  const { reason, variant: served, metadata } = openFeatureResolution(flag, { ...outcome, ...arm }, variant && { key: variant.experiment, variant: variant.key }, now);
  if (reason === 'DISABLED') return { key: flag.key, reason };
  const value = readFlagValue(flag.type ?? 'string', outcome.value);
  return { key: flag.key, ...(value != null && { value: value as OfrepEvaluation['value'] }), reason: ofrepReason(reason), ...(served !== undefined && { variant: served }), ...(metadata && { metadata }) };
}
