import type { Environment } from '../lib/environment';
import { measure, type LoadSpec, type Measurement } from '../lib/load';
import type { Options } from '../lib/options';
import { bearer, EXPERIMENTS, freshIngestBody } from '../lib/setup';

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
  };
}

export async function ingestPhase(env: Environment, options: Options): Promise<Measurement> {
  await checkIngest(env);
  return measure(`ingest ${env.engine}`, ingestSpec(env, options), options);
}

/** One request first: a benchmark of error answers would be worthless. */
async function checkIngest(env: Environment): Promise<void> {
  const response = await fetch(env.server.url + env.team.paths.ingest, {
    method: 'POST',
    headers: { ...bearer(env.team.ingestKey), 'content-type': 'application/json' },
    body: freshIngestBody(),
  });
  const body = (await response.json()) as { data?: { assignments?: unknown[] } };
  if (response.status !== 200 || body.data?.assignments?.length !== EXPERIMENTS.length) {
    throw new Error(`ingest check failed: ${response.status} ${JSON.stringify(body)}`);
  }
}
