import type { components } from '../../generated/api';
import { currentConfig, type TeamConfigs } from '../config/service';
import { evaluateConfig } from '../../domain/evaluation';
import { recordRolloutExposure, rolloutExposure } from '../ingest/rollout-exposure';
import { ingest, type Ingestion } from '../ingest/service';
import type { Storage } from '../storage/database';
import type { TeamRow } from '../teams/store';

type EvaluateRequest = components['schemas']['EvaluateRequest'];
type Evaluation = components['schemas']['Evaluation'];

/**
 * The team's config evaluated for the participant at the server's clock. With `enrol`, the
 * participant is ingested first (quota and all), experiments answer its stored assignments, and
 * each flag a safe rollout decided records the participant's exposure to it.
 */
export async function evaluate(storage: Storage, caches: { configs: TeamConfigs; ingestion: Ingestion }, team: TeamRow, input: EvaluateRequest): Promise<Evaluation> {
  const participant = { key: input.participant, attributes: input.attributes };
  const stored = input.enrol ? await enrol(caches.ingestion, team, input) : undefined;
  const config = await currentConfig(storage.db, caches.configs, team);
  const assignments = stored && Object.fromEntries(config.experiments.map((experiment) => [experiment.key, stored.get(experiment.key) ?? null]));
  const evaluation = evaluateConfig(config, participant, { assignments });
  if (input.enrol) {
    const exposures = config.features.flatMap((flag) => rolloutExposure(flag, evaluation.features[flag.key]!) ?? []);
    await Promise.all(exposures.map((rollout) => recordRolloutExposure(caches.ingestion, team, ingestedParticipant(input), rollout)));
  }
  return evaluation;
}

/** The participant's stored variants in running experiments, by experiment key, after ingesting it. */
async function enrol(ingestion: Ingestion, team: TeamRow, input: EvaluateRequest): Promise<Map<string, string>> {
  const outcome = await ingest(ingestion, team, { participant: ingestedParticipant(input) });
  return new Map(outcome.assignments.map((assignment) => [assignment.experiment, assignment.variant]));
}

function ingestedParticipant(input: EvaluateRequest) {
  return input.attributes ? { key: input.participant, attributes: input.attributes } : input.participant;
}
