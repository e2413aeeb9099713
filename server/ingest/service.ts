import type { components } from '../../generated/api';
import { assignVariant } from '../domain/assignment';
import * as enrolments from '../enrolments/store';
import { requireEvent } from '../events/service';
import { requireExperiment } from '../experiments/service';
import { listRunningExperiments, type ExperimentRow } from '../experiments/store';
import { Conflict, QuotaExceeded } from '../http/errors';
import { toParticipant, upsertParticipant, type ParticipantInput } from '../participants/store';
import type { Db } from '../storage/database';
import { now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { requireVariant } from '../variants/service';
import { variantsOfMany, type ResolvedVariant } from '../variants/store';
import { consumeIngest, quotaMonth } from './quota';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestResult = components['schemas']['IngestResult'];

/** One transaction: on 404, 409 or 402 nothing at all is stored. */
export async function ingest(db: Db, team: TeamRow, input: IngestRequest): Promise<IngestResult> {
  const participantInput: ParticipantInput = typeof input.participant === 'string' ? { key: input.participant } : input.participant;
  return db.transaction().execute(async (trx) => {
    const event = input.event === undefined ? undefined : await requireEvent(trx, team, input.event);
    const target = input.experiment === undefined ? undefined : await requireExperiment(trx, team, input.experiment);
    const experiments = target ? [target] : await listRunningExperiments(trx, team.id);
    const variants = await variantsOfMany(trx, team.id, experiments.map((experiment) => experiment.id));
    const chosen = target && input.variant !== undefined ? requireVariant(variants.get(target.id) ?? [], target, input.variant) : undefined;
    const at = now();
    if (target && target.status !== 'running') {
      // The quota comes before enrolment (402 before 409); the 409 rolls this count back.
      await requireQuota(trx, team, at);
      throw new Conflict(`Experiment '${target.key}' is ${target.status}; only a running experiment enrols.`);
    }
    const participant = await upsertParticipant(trx, team.id, participantInput, at);
    await enrolInRunning(trx, team, participant, experiments, variants, chosen, at);
    const assignments = (await enrolments.enrolmentsOf(trx, team.id, participant.id)).filter((e) => e.status === 'running');
    if (event) {
      // By experiment, the shared lock order (see enrolments.byExperiment): never in enrolment order.
      for (const enrolment of enrolments.byExperiment(assignments.filter((e) => !target || e.experiment_id === target.id))) {
        await enrolments.recordConversion(trx, team.id, { participantId: participant.id, experimentId: enrolment.experiment_id, variantId: enrolment.variant_id }, event.id);
      }
    }
    // Last, so that the quota row is locked only briefly; failing here still rolls everything back.
    await requireQuota(trx, team, at);
    return { participant: toParticipant(participant), assignments: assignments.map(enrolments.toEnrolment) };
  });
}

/** Counts this ingest against the team's monthly quota, or 402. */
async function requireQuota(trx: Db, team: TeamRow, at: string): Promise<void> {
  if (!(await consumeIngest(trx, team.id, team.ingest_limit, quotaMonth(at)))) {
    throw new QuotaExceeded(`Team ${team.id} has used its ${team.ingest_limit} ingests of ${quotaMonth(at)} (UTC).`);
  }
}

/** Sticky: existing assignments stay; excluded participants stay out; the rest are hashed (or take the client's choice). */
async function enrolInRunning(
  trx: Db,
  team: TeamRow,
  participant: { id: number; key: string },
  experiments: ExperimentRow[],
  variants: Map<number, ResolvedVariant[]>,
  chosen: ResolvedVariant | undefined,
  at: string,
): Promise<void> {
  const enrolled = new Set((await enrolments.enrolmentsOf(trx, team.id, participant.id)).map((e) => e.experiment_id));
  const excluded = await enrolments.excludedExperimentIds(trx, team.id, participant.id);
  for (const experiment of experiments) {
    if (experiment.status !== 'running' || enrolled.has(experiment.id) || excluded.has(experiment.id)) continue;
    const shares = (variants.get(experiment.id) ?? []).map((variant) => ({ ...variant, traffic: variant.share }));
    const variant = chosen ?? assignVariant(experiment.seed, participant.key, shares);
    if (variant) await enrolments.enrol(trx, team.id, participant.id, experiment.id, variant.id, at);
  }
}
