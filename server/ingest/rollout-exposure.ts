import type { components } from '../../generated/api';
import { HttpError } from '../http/errors';
import type { TeamRow } from '../teams/store';
import { ingest, type Ingestion } from './service';

type ConfigFeature = components['schemas']['ConfigFeature'];
type FeatureEvaluation = components['schemas']['FeatureEvaluation'];
type IngestRequest = components['schemas']['IngestRequest'];
type IngestRolloutExposure = components['schemas']['IngestRolloutExposure'];

/** The participant's exposure to the flag's safe rollout, when the rollout decided what the flag served. */
export function rolloutExposure(flag: ConfigFeature, outcome: FeatureEvaluation): IngestRolloutExposure | undefined {
  return outcome.rollout_arm && flag.rollout ? { feature: flag.key, number: flag.rollout.number, arm: outcome.rollout_arm } : undefined;
}

/**
 * Ingests the exposure as an SDK reports it. One the service refuses — the quota used up, the
 * rollout ended or its flag deleted since the config was read (402, 404, 409) — is not recorded:
 * the evaluation it came from stands.
 */
export async function recordRolloutExposure(ingestion: Ingestion, team: TeamRow, participant: IngestRequest['participant'], rollout: IngestRolloutExposure): Promise<void> {
  try {
    await ingest(ingestion, team, { participant, rollout, enrol: false });
  } catch (error) {
    if (!(error instanceof HttpError && [402, 404, 409].includes(error.status))) throw error;
  }
}
