import type { Environment } from '../lib/environment';
import { measure, type LoadSpec, type Measurement } from '../lib/load';
import type { Options } from '../lib/options';
import { bearer, EXPERIMENTS, freshIngestBody, keyedIngestBody, type BenchTeam } from '../lib/setup';

// Its `select 1` queues behind the transactions still running (SQLite: one connection).
export const HEALTH = '/api/health';

/** Validated, authenticated, durable ingest: a new participant and one event per request, with the ingest key. */
export function ingestSpec(env: Environment, options: Options): LoadSpec {
  return {
    url: env.server.url + env.team.paths.ingest,
    method: 'POST',
    headers: bearer(env.team.ingestKey),
    body: freshIngestBody,
    connections: options.connections,
    duration: options.duration,
    settle: env.server.url + HEALTH,
    serverPid: env.server.pid,
    databaseCpu: env.engine === 'postgres',
  };
}

/** Items per batch request: what an SDK flushing every few seconds sends. */
export const BATCH_ITEMS = 100;

/** A body for POST …/ingest/batch: BATCH_ITEMS items, each made by `item`. */
export function batchOf(item: () => string): () => string {
  return () => `{"items":[${Array.from({ length: BATCH_ITEMS }, item).join(',')}]}`;
}

export interface IngestResult {
  single: Measurement;
  /** POST …/ingest/batch with BATCH_ITEMS new participants and their events: requests per second (× BATCH_ITEMS: items). */
  batch: Measurement;
  /** The same two with an idempotency key on every item (what an SDK sends): what storing the keys costs. */
  singleKeyed?: Measurement;
  batchKeyed?: Measurement;
}

export async function ingestPhase(env: Environment, options: Options): Promise<IngestResult> {
  await checkIngest(env.server.url, env.team);
  const single = await measure(`ingest ${env.engine}`, ingestSpec(env, options), options);
  // Each keyed figure right after its unkeyed one, on about the same amount of stored data.
  const singleKeyed = await measure(`ingest with a key ${env.engine}`, { ...ingestSpec(env, options), body: keyedIngestBody }, options);
  const batchUrl = `${env.server.url}${env.team.paths.ingest}/batch`;
  const batch = await measure(`ingest batch of ${BATCH_ITEMS} ${env.engine}`, { ...ingestSpec(env, options), url: batchUrl, body: batchOf(freshIngestBody) }, options);
  const batchKeyed = await measure(`ingest batch of ${BATCH_ITEMS} with keys ${env.engine}`, { ...ingestSpec(env, options), url: batchUrl, body: batchOf(keyedIngestBody) }, options);
  return { single, batch, singleKeyed, batchKeyed };
}

/** One request first: a benchmark of error answers would be worthless. */
export async function checkIngest(baseUrl: string, team: BenchTeam): Promise<void> {
  const response = await fetch(baseUrl + team.paths.ingest, {
    method: 'POST',
    headers: { ...bearer(team.ingestKey), 'content-type': 'application/json' },
    body: freshIngestBody(),
  });
  const body = (await response.json()) as { data?: { assignments?: unknown[] } };
  if (response.status !== 200 || body.data?.assignments?.length !== EXPERIMENTS.length) {
    throw new Error(`ingest check failed: ${response.status} ${JSON.stringify(body)}`);
  }
}
