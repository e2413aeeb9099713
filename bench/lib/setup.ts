import { randomBytes } from 'node:crypto';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { openStorage } from '../../server/storage/database';
import type { ScratchStorage } from './storage';

/** The team every measurement runs against: 3 running experiments with 2–3 variants each. */
export const EVENTS = [{ key: 'purchase' }, { key: 'signup' }, { key: 'page_view', type: 'count' as const }];
export const FEATURES = [{ key: 'new_header', enabled: true }, { key: 'dark_mode' }];
export const EXPERIMENTS = [
  { key: 'checkout_button', event: 'purchase', variants: [{ key: 'control', control: true, traffic: 50 }, { key: 'treatment', traffic: 50 }] },
  // Shares left unset: resolved to 34/33/33.
  { key: 'pricing_page', event: 'purchase', variants: [{ key: 'control', control: true }, { key: 'discount' }, { key: 'bundle' }] },
  { key: 'onboarding', event: 'signup', variants: [{ key: 'control', control: true, traffic: 80 }, { key: 'guided', traffic: 20 }] },
];
export const STATISTICS_OF = { experiment: 'checkout_button', variant: 'treatment' };

export interface BenchTeam {
  id: number;
  token: string;
  ingestKey: string;
  paths: { ingest: string; config: string; experiment: string; statistics: string };
}

/** The team is made as an operator would (the admin service); everything else through the public API with its token. */
export async function createBenchTeam(baseUrl: string, scratch: ScratchStorage): Promise<BenchTeam> {
  // The server at baseUrl migrated its database, perhaps to another migration than this checkout's (bench/ab.ts).
  const storage = await openStorage({ ...scratch.options, poolSize: 1, migrate: false });
  const created = await createTeam(storage.db, { name: 'Bench', email: `bench-${randomBytes(4).toString('hex')}@example.com` }).finally(() => storage.close());
  const team = created.team.id;
  const api = createApiClient(baseUrl, created.token);
  const path = { team };
  const check = <T extends { error?: unknown; response: Response }>(what: string, result: T): T => {
    if (result.error !== undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`);
    return result;
  };

  for (const event of EVENTS) check(`event ${event.key}`, await api.POST('/api/teams/{team}/events', { params: { path }, body: event }));
  for (const feature of FEATURES) check(`feature ${feature.key}`, await api.POST('/api/teams/{team}/features', { params: { path }, body: feature }));
  for (const experiment of EXPERIMENTS) {
    const { key, event, variants } = experiment;
    check(`experiment ${key}`, await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key, event } }));
    for (const variant of variants) {
      check(
        `variant ${key}/${variant.key}`,
        await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team, experiment: key } }, body: variant }),
      );
    }
    check(`start ${key}`, await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team, experiment: key } } }));
  }

  const base = `/api/teams/${team}`;
  return {
    id: team,
    token: created.token,
    ingestKey: created.ingest_key,
    paths: {
      ingest: `${base}/ingest`,
      config: `${base}/config`,
      experiment: `${base}/experiments/${STATISTICS_OF.experiment}`,
      statistics: `${base}/experiments/${STATISTICS_OF.experiment}/variants/${STATISTICS_OF.variant}/statistics`,
    },
  };
}

const run = randomBytes(3).toString('hex');
let participants = 0;

/** An ingest body with a participant id never used before in this run. */
export function freshIngestBody(): string {
  return JSON.stringify({ participant: `p-${run}-${++participants}`, event: 'purchase' });
}

/** The same with an idempotency key never used before, as an SDK sends each item. */
export function keyedIngestBody(): string {
  const n = ++participants;
  return JSON.stringify({ participant: `p-${run}-${n}`, event: 'purchase', idempotency_key: `k-${run}-${n}` });
}

export function bearer(credential: string): Record<string, string> {
  return { authorization: `Bearer ${credential}` };
}
