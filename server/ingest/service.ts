import type { components } from '../../generated/api';
import { assignVariant } from '../domain/assignment';
import * as enrolments from '../enrolments/store';
import type { ExperimentRow } from '../experiments/store';
import { Conflict, HttpError, QuotaExceeded, ServiceUnavailable } from '../http/errors';
import { problemBody } from '../http/problem';
import { isStorageUnavailable } from '../storage/unavailable';
import { toParticipant, upsertParticipant, type ParticipantInput, type ParticipantRow } from '../participants/store';
import type { Db, Storage } from '../storage/database';
import { now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { requireVariant } from '../variants/service';
import { variantsOfMany, type ResolvedVariant } from '../variants/store';
import { contextOf, eventOf, experimentOf, type IngestContexts } from './context';
import { ingestFlusher } from './set-based';
import { consumeIngest, quotaMonth } from './quota';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];
type IngestBatchItem = components['schemas']['IngestBatchItem'];

/**
 * One unit of work, committed together with concurrent ingests (group commit): on 404, 409 or
 * 402 nothing at all is stored, and a 200 is sent only once the commit is durable.
 */
export async function ingest(storage: Storage, contexts: IngestContexts, team: TeamRow, input: IngestRequest): Promise<IngestOutcome> {
  if (storage.engine === 'postgres') {
    const { participant, assignments } = await flusherOf(storage)({ team, contexts, input });
    return { participant: toParticipant(participant), assignments: assignments.map(enrolments.toEnrolment) };
  }
  const participantInput: ParticipantInput = typeof input.participant === 'string' ? { key: input.participant } : input.participant;
  return storage.batched(async (trx) => {
    const context = await contextOf(trx, contexts, team);
    const event = input.event === undefined ? undefined : await eventOf(trx, team, context, input.event);
    const target = input.experiment === undefined ? undefined : await experimentOf(trx, team, context, input.experiment);
    const experiments = target ? [target] : context.running;
    const variants = target && !context.variants.has(target.id) ? await variantsOfMany(trx, team.id, [target.id]) : context.variants;
    const chosen = target && input.variant !== undefined ? requireVariant(variants.get(target.id) ?? [], target, input.variant) : undefined;
    const at = now();
    if (target && target.status !== 'running') {
      // The quota comes before enrolment (402 before 409); the 409 rolls this count back.
      await requireQuota(trx, team, at);
      throw new Conflict(`Experiment '${target.key}' is ${target.status}; only a running experiment enrols.`);
    }
    const { row: participant, isNew } = await upsertParticipant(trx, team.id, participantInput, at);
    const assignments = (await enrolInRunning(trx, team, participant, isNew, experiments, variants, chosen, at)).filter((e) => e.status === 'running');
    if (event) {
      await enrolments.recordConversions(trx, team.id, participant.id, assignments.filter((e) => !target || e.experiment_id === target.id), event.id, at);
    }
    // Last, so that the quota row is locked only briefly; failing here still rolls everything back.
    await requireQuota(trx, team, at);
    return { participant: toParticipant(participant), assignments: assignments.map(enrolments.toEnrolment) };
  }, team.id);
}

/**
 * A batch: each item is a single ingest, all joining the group commit at once and in order, so
 * that they share its transactions. An item the single ingest would answer 402, 404 or 409 — or
 * that storage failed under (503) — gets that problem in its place; every other item is stored.
 */
export async function ingestBatch(storage: Storage, contexts: IngestContexts, team: TeamRow, items: IngestRequest[]): Promise<IngestBatchItem[]> {
  const outcomes = await Promise.allSettled(items.map((item) => ingest(storage, contexts, team, item)));
  return outcomes.map((outcome): IngestBatchItem => {
    if (outcome.status === 'fulfilled') return { status: 200, data: outcome.value };
    const problem = itemProblem(outcome.reason);
    if (!problem) throw outcome.reason;
    return { status: problem.status as IngestBatchItem['status'], error: problemBody(problem) };
  });
}

function itemProblem(error: unknown): HttpError | undefined {
  if (error instanceof HttpError && [402, 404, 409].includes(error.status)) return error;
  return isStorageUnavailable(error) ? new ServiceUnavailable('Storage failed under this item; it was not stored. Send it again.') : undefined;
}

// PostgreSQL: ingests are flushed set-based (set-based.ts), a constant number of round trips
// for all the ingests of a flush; one flusher per storage.
const flushers = new WeakMap<Storage, ReturnType<typeof ingestFlusher>>();
function flusherOf(storage: Storage): ReturnType<typeof ingestFlusher> {
  let flusher = flushers.get(storage);
  if (!flusher) flushers.set(storage, (flusher = ingestFlusher(storage.db)));
  return flusher;
}

/** Counts this ingest against the team's monthly quota, or 402. */
async function requireQuota(trx: Db, team: TeamRow, at: string): Promise<void> {
  if (!(await consumeIngest(trx, team.id, team.ingest_limit, quotaMonth(at)))) {
    throw new QuotaExceeded(`Team ${team.id} has used its ${team.ingest_limit} ingests of ${quotaMonth(at)} (UTC).`);
  }
}

/**
 * Sticky: existing assignments stay; excluded participants stay out; the rest are hashed (or
 * take the client's choice). Answers every enrolment of the participant, in enrolment order.
 */
async function enrolInRunning(
  trx: Db,
  team: TeamRow,
  participant: ParticipantRow,
  isNew: boolean,
  experiments: ExperimentRow[],
  variants: Map<number, ResolvedVariant[]>,
  chosen: ResolvedVariant | undefined,
  at: string,
): Promise<enrolments.EnrolmentRow[]> {
  // A participant created by this very ingest has no enrolments or exclusions to read.
  const existing = isNew ? [] : await enrolments.enrolmentsOf(trx, team.id, participant.id);
  const excluded = isNew ? new Set<number>() : await enrolments.excludedExperimentIds(trx, team.id, participant.id);
  const enrolled = new Set(existing.map((e) => e.experiment_id));
  const choices: Array<{ experiment: ExperimentRow; variant: ResolvedVariant }> = [];
  for (const experiment of experiments) {
    if (experiment.status !== 'running' || enrolled.has(experiment.id) || excluded.has(experiment.id)) continue;
    const shares = (variants.get(experiment.id) ?? []).map((variant) => ({ ...variant, traffic: variant.share }));
    const variant = chosen ?? assignVariant(experiment.seed, participant.key, shares);
    if (variant) choices.push({ experiment, variant });
  }
  const ids = await enrolments.enrolInEach(trx, team.id, participant.id, choices.map(({ experiment, variant }) => ({ experiment_id: experiment.id, variant_id: variant.id })), at);
  // A concurrent ingest of the same participant enrolled it first somewhere: its assignments are the ones.
  if (ids.size < choices.length) return enrolments.enrolmentsOf(trx, team.id, participant.id);
  const added = choices.map(({ experiment, variant }): enrolments.EnrolmentRow => ({
    id: ids.get(experiment.id)!,
    experiment_id: experiment.id,
    variant_id: variant.id,
    experiment_key: experiment.key,
    status: 'running',
    variant_key: variant.key,
    enrolled_at: at,
  }));
  return [...existing, ...added];
}
