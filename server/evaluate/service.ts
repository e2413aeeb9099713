import type { components } from '../../generated/api';
import { currentConfig, type TeamConfigs } from '../config/service';
import { evaluateConfig } from '../../domain/evaluation';
import { ingest, type Ingestion } from '../ingest/service';
import type { Storage } from '../storage/database';
import type { TeamRow } from '../teams/store';

type EvaluateRequest = components['schemas']['EvaluateRequest'];
type Evaluation = components['schemas']['Evaluation'];

/**
 * The team's config evaluated for the participant at the server's clock. With `enrol`, the
 * participant is ingested first (quota and all), and experiments answer its stored assignments.
 */
export async function evaluate(storage: Storage, caches: { configs: TeamConfigs; ingestion: Ingestion }, team: TeamRow, input: EvaluateRequest): Promise<Evaluation> {
  const participant = { key: input.participant, attributes: input.attributes };
  const stored = input.enrol ? await enrol(caches.ingestion, team, input) : undefined;
  const config = await currentConfig(storage.db, caches.configs, team);
  const assignments = stored && Object.fromEntries(config.experiments.map((experiment) => [experiment.key, stored.get(experiment.key) ?? null]));
  return evaluateConfig(config, participant, { assignments });
}

/** The participant's stored variants in running experiments, by experiment key, after ingesting it. */
async function enrol(ingestion: Ingestion, team: TeamRow, input: EvaluateRequest): Promise<Map<string, string>> {
  const participant = input.attributes ? { key: input.participant, attributes: input.attributes } : input.participant;
  const outcome = await ingest(ingestion, team, { participant });
  return new Map(outcome.assignments.map((assignment) => [assignment.experiment, assignment.variant]));
}
