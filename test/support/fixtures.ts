import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { components } from 'experimentation-api';
import type { TestTeam } from './team';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];

/** An event (created when new), an experiment on it with `control` and `treatment`, started unless told otherwise. */
export async function createExperiment(team: TestTeam, key: string, options: { event?: string; start?: boolean } = {}): Promise<void> {
  const path = { team: team.id };
  const event = options.event ?? 'goal';
  const events = await team.api.GET('/api/teams/{team}/events', { params: { path, query: { per_page: 100 } } });
  if (!events.data?.data.some((e) => e.key === event)) {
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: event } });
  }
  const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key, event } });
  expect(created.response.status).toBe(200);
  for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
    const added = await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: key } }, body: variant });
    expect(added.response.status).toBe(200);
  }
  if (options.start ?? true) {
    const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: key } } });
    expect(started.response.status).toBe(200);
  }
}

export async function stopExperiment(team: TestTeam, key: string): Promise<void> {
  const stopped = await team.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { team: team.id, experiment: key } } });
  expect(stopped.response.status).toBe(200);
}

/** An ingest with the team's ingest key that must succeed; answers `data`. */
export async function ingestOk(team: TestTeam, body: IngestRequest): Promise<IngestOutcome> {
  const result = await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body });
  expect(result.response.status, JSON.stringify(result.error)).toBe(200);
  return result.data!.data;
}

/** Runs `work` over `items` with at most `limit` in flight; results in item order. */
export async function inParallel<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

/** The published assignment rule (team config), computed independently of the server. */
export function expectedVariant(seed: string, key: string, variants: Array<{ key: string; traffic: number }>): string | undefined {
  const h = createHash('sha256').update(`${seed}:${key}`, 'utf8').digest().readUInt32BE(0);
  const bucket = Math.floor((h * 100) / 2 ** 32);
  let cumulative = 0;
  return variants.find((variant) => bucket < (cumulative += variant.traffic))?.key;
}
