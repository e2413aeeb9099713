import type { components } from '../../generated/api';
import { currentConfig, type TeamConfigs } from '../config/service';
import { HttpError } from '../http/errors';
import { recordRolloutExposure, rolloutExposure } from '../ingest/rollout-exposure';
import { ingest, type Ingestion } from '../ingest/service';
import type { Storage } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { decideOfrep, subjectOf, type OfrepSubject } from './decide';
import { FlagNotFound, OfrepError } from '../contract/ofrep-failure';

type OfrepRequest = components['schemas']['OfrepEvaluationRequest'];
type OfrepEvaluation = components['schemas']['OfrepEvaluation'];
type OfrepBulkEvaluation = components['schemas']['OfrepBulkEvaluation'];

export interface OfrepCaches {
  configs: TeamConfigs;
  ingestion: Ingestion;
}

/**
 * One flag for the context, with its exposures recorded as the SDK reports them. A decision that
 * reaches an experiment rule with the participant in its experiment enrols it there first, and
 * is then decided by the stored, sticky variant; one its safe rollout made records the exposure
 * to the rollout in the participant's arm.
 */
export async function evaluateOne(storage: Storage, caches: OfrepCaches, team: TeamRow, key: string, request: OfrepRequest): Promise<OfrepEvaluation> {
  const config = await currentConfig(storage.db, caches.configs, team);
  const flag = config.features.find((feature) => feature.key === key);
  if (!flag) throw new FlagNotFound(team.id, key);
  const subject = subjectOf(request.context);
  const now = Date.now();
  const first = decideOfrep(config, flag, subject, now);
  if ('errorCode' in first.answer) throw new OfrepError(400, first.answer.errorCode, first.answer.errorDetails ?? '');
  const exposures = first.decision?.exposures ?? [];
  const stored = exposures.length > 0 ? await enrol(caches.ingestion, team, subject, exposures.map((exposure) => exposure.experiment)) : undefined;
  const decided = stored ? decideOfrep(config, flag, subject, now, stored) : first;
  const rollout = decided.decision && rolloutExposure(flag, decided.decision.outcome);
  if (rollout) await recordRolloutExposure(caches.ingestion, team, ingestedParticipant(subject), rollout);
  return decided.answer as OfrepEvaluation;
}

/** Every flag for the context; nothing is recorded: nobody is enrolled or exposed. */
export async function evaluateAll(storage: Storage, configs: TeamConfigs, team: TeamRow, request: OfrepRequest): Promise<Pick<OfrepBulkEvaluation, 'flags'>> {
  const config = await currentConfig(storage.db, configs, team);
  const subject = subjectOf(request.context);
  const now = Date.now();
  return { flags: config.features.map((flag) => decideOfrep(config, flag, subject, now).answer) };
}

/**
 * Ingests the participant into each experiment (its context attributes stored when it has any),
 * and answers its stored variants by experiment — or undefined when an enrolment is refused
 * (quota used up, the experiment stopped meanwhile): the flag is then answered by hash.
 */
async function enrol(ingestion: Ingestion, team: TeamRow, subject: OfrepSubject, experiments: string[]): Promise<Map<string, string> | undefined> {
  const participant = ingestedParticipant(subject);
  const stored = new Map<string, string>();
  try {
    for (const experiment of experiments) {
      const outcome = await ingest(ingestion, team, { participant, experiment });
      for (const assignment of outcome.assignments) stored.set(assignment.experiment, assignment.variant);
    }
  } catch (error) {
    if (error instanceof HttpError && [402, 404, 409].includes(error.status)) return undefined;
    throw error;
  }
  return stored;
}

/** The context's participant as an ingest names it: its attributes stored when it has any. */
function ingestedParticipant(subject: OfrepSubject) {
  const key = subject.participant!;
  return Object.keys(subject.attributes).length > 0 ? { key, attributes: subject.attributes } : key;
}
