import { randomBytes } from 'node:crypto';
import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import { openStorage } from '../../server/storage/database';
import { TEAM_LIMITS } from '../../server/teams/limits';
import type { Environment } from '../lib/environment';
import { flood } from '../lib/flood';
import { measure, progress, type LoadSpec, type Measurement } from '../lib/load';
import type { Options } from '../lib/options';
import { bearer, freshIngestBody } from '../lib/setup';
import { HEALTH } from './ingest';
import { readSpec } from './reads';

/** Connections that flood the largest team's largest reads: half its config, half its statistics. */
export const FLOOD_CONNECTIONS = 40;
/** Participants of the largest team: each converts on one of its events, so that every event's statistics have counts. */
const PARTICIPANTS = 4_000;

export interface IsolationResult {
  /** The team at the limits: its events, and the size of its config in bytes. */
  largest: { events: number; configBytes: number; statisticsBytes: number };
  /** Sequential statistics reads of a variant at the events limit. */
  statisticsAtLimit: Measurement;
  /** Another team's config read and ingest, each from one connection: alone, then under the flood. */
  other: Record<'alone' | 'flooded', { config: Measurement; ingest: Measurement }>;
  /** Reads the flood got answered, per second. */
  floodRps: number;
}

/**
 * What one team can do to the others within its limits: a team filled to them (200 events with
 * counts, flags' values at their total, a running experiment), its statistics read at the limit,
 * and the bench team's config and ingest latency alone and while FLOOD_CONNECTIONS read the large
 * team's config and statistics as fast as the server answers.
 */
export async function isolationPhase(env: Environment, options: Options): Promise<IsolationResult> {
  try {
    const large = await fillToLimits(env);
    const statisticsSpec: LoadSpec = { url: env.server.url + large.statisticsPath, headers: bearer(large.token), connections: 1, duration: options.duration, serverPid: env.server.pid };
    const statisticsAtLimit = await measure(`isolation ${env.engine} statistics @ ${TEAM_LIMITS.events} events`, statisticsSpec, options);
    const other = async (when: string) => ({
      config: await measure(`isolation ${env.engine} other team's config, ${when}`, readSpec(env, 'config', { connections: 1, duration: options.duration }), options),
      ingest: await measure(
        `isolation ${env.engine} other team's ingest, ${when}`,
        { url: env.server.url + env.team.paths.ingest, method: 'POST', headers: bearer(env.team.ingestKey), body: freshIngestBody, connections: 1, duration: options.duration, settle: env.server.url + HEALTH },
        options,
      ),
    });
    const alone = await other('alone');
    const floods = [large.configPath, large.statisticsPath].map((path) => flood(env.server.url + path, bearer(large.token), FLOOD_CONNECTIONS / 2));
    const flooded = await other(`under a flood of ${FLOOD_CONNECTIONS} connections`);
    const [config, statistics] = await Promise.all(floods.map((f) => f.stop()));
    return {
      largest: { events: TEAM_LIMITS.events, configBytes: large.configBytes, statisticsBytes: large.statisticsBytes },
      statisticsAtLimit,
      other: { alone, flooded },
      floodRps: config!.answersPerSecond + statistics!.answersPerSecond,
    };
  } finally {
    await env.close();
  }
}

/** A second team on the environment's storage, filled through the public API to its limits. */
async function fillToLimits(env: Environment) {
  progress(`isolation ${env.engine}: filling a team to its limits`);
  const storage = await openStorage({ ...env.scratch.options, poolSize: 1 });
  const created = await createTeam(storage.db, { name: 'Largest', email: `largest-${randomBytes(4).toString('hex')}@example.com` }).finally(() => storage.close());
  const team = created.team.id;
  const api = createApiClient(env.server.url, created.token);
  const ingest = createApiClient(env.server.url, created.ingest_key);
  const ok = <T extends { error?: unknown; response: Response }>(what: string, result: T): T => {
    if (result.error !== undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`);
    return result;
  };
  const path = { team };
  const events = Array.from({ length: TEAM_LIMITS.events }, (_, i) => `event_${i}`);
  for (const key of events) ok(`event ${key}`, await api.POST('/api/teams/{team}/events', { params: { path }, body: { key } }));
  const value = 'v'.repeat(10_000);
  for (let i = 0; i < Math.floor(TEAM_LIMITS.flagValueCharacters / value.length); i++) {
    ok(`flag ${i}`, await api.POST('/api/teams/{team}/features', { params: { path }, body: { key: `flag_${i}`, enabled: true, value } }));
  }
  const experiment = { team, experiment: 'largest' };
  ok('experiment', await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'largest', event: events[0]! } }));
  ok('control', await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'control', control: true } }));
  ok('treatment', await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'treatment' } }));
  ok('start', await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: experiment } }));
  for (let i = 0; i < PARTICIPANTS; i += 20) {
    await Promise.all(
      Array.from({ length: 20 }, (_, j) =>
        ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: `visitor-${i + j}`, event: events[(i + j) % events.length]! } }).then((r) => ok('ingest', r)),
      ),
    );
  }
  const base = `/api/teams/${team}`;
  const statisticsPath = `${base}/experiments/largest/variants/treatment/statistics`;
  const bytes = async (path: string, credential: string) => (await (await fetch(env.server.url + path, { headers: bearer(credential) })).arrayBuffer()).byteLength;
  return {
    token: created.token,
    configPath: `${base}/config`,
    statisticsPath,
    configBytes: await bytes(`${base}/config`, created.ingest_key),
    statisticsBytes: await bytes(statisticsPath, created.token),
  };
}
