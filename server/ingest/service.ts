import type { components } from '../../generated/api';
import { toMicros, VALUE_DECIMALS } from '../../domain/metric';
import { BadRequest, HttpError, ServiceUnavailable } from '../http/errors';
import { problemBody } from '../http/problem';
import type { Storage } from '../storage/database';
import { isStorageUnavailable } from '../storage/unavailable';
import type { TeamRow } from '../teams/store';
import type { IngestContexts } from './context';
import { ledgerOf } from '../ledger/engines';
import { ingestFlusher } from './flusher';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];
type IngestBatchItem = components['schemas']['IngestBatchItem'];

/**
 * Joins the flush of concurrent ingests (flush.ts): on 404, 409 or 402 nothing at all is
 * stored of this ingest, and a 200 is sent only once the flush's commit is durable.
 */
export async function ingest(ingestion: Ingestion, team: TeamRow, input: IngestRequest): Promise<IngestOutcome> {
  checkValue(input, '/body/value');
  return ingestion.enqueue({ team, contexts: ingestion.contexts, input });
}

/** What ingests go through: the teams' ingest contexts and the one flusher of the storage, built once where the app is composed. */
export interface Ingestion {
  contexts: IngestContexts;
  enqueue: ReturnType<typeof ingestFlusher>;
}

/** The ingestion of a storage: its flushes take turns; an idempotency key is kept `keyWindowMs`, as the key sweep keeps it (main.ts). */
export function ingestion(storage: Storage, contexts: IngestContexts, keyWindowMs: number): Ingestion {
  return { contexts, enqueue: ingestFlusher(storage.db, ledgerOf(storage.engine), keyWindowMs) };
}

/**
 * A batch: each item is a single ingest, all queued at once and in order, taken by as many
 * flushes as their rows need (flusher.ts) while other teams' ingests take their turns. An item the
 * single ingest would answer 402, 404 or 409 — or that storage failed under (503) — gets that
 * problem in its place; every other item is stored.
 */
export async function ingestBatch(ingestion: Ingestion, team: TeamRow, items: IngestRequest[]): Promise<IngestBatchItem[]> {
  items.forEach((item, i) => checkValue(item, `/body/items/${i}/value`));
  const outcomes = await Promise.allSettled(items.map((item) => ingestion.enqueue({ team, contexts: ingestion.contexts, input: item })));
  return outcomes.map((outcome): IngestBatchItem => {
    if (outcome.status === 'fulfilled') return { status: 200, data: outcome.value };
    const problem = itemProblem(outcome.reason);
    if (!problem) throw outcome.reason;
    return { status: problem.status as IngestBatchItem['status'], error: problemBody(problem) };
  });
}

/** The schema bounds `value`; its decimals are checked here (400, nothing stored): at most six, as written. */
function checkValue(input: IngestRequest, path: string): void {
  if (input.value !== undefined && toMicros(input.value) === null) {
    throw new BadRequest(`${path} must have at most ${VALUE_DECIMALS} decimals.`, [{ path, message: `must have at most ${VALUE_DECIMALS} decimals` }]);
  }
}

function itemProblem(error: unknown): HttpError | undefined {
  if (error instanceof HttpError && [402, 404, 409].includes(error.status)) return error;
  return isStorageUnavailable(error) ? new ServiceUnavailable('Storage failed under this item; it was not stored. Send it again.') : undefined;
}

