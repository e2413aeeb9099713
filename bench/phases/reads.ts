import type { Environment } from '../lib/environment';
import { measure, type LoadSpec, type Measurement } from '../lib/load';
import type { Options } from '../lib/options';
import { bearer } from '../lib/setup';
import { HEALTH } from './ingest';

export type Read = 'config' | 'experiment' | 'statistics';
export const READS: Read[] = ['config', 'experiment', 'statistics'];

/** Config as an SDK fetches it (ingest key); experiment and statistics as a dashboard does (API token). */
export function readSpec(env: Environment, read: Read, options: Pick<Options, 'connections' | 'duration'>): LoadSpec {
  const credential = read === 'config' ? env.team.ingestKey : env.team.token;
  return {
    url: env.server.url + env.team.paths[read],
    headers: bearer(credential),
    connections: options.connections,
    duration: options.duration,
    settle: env.server.url + HEALTH,
    serverPid: env.server.pid,
    databaseCpu: env.engine === 'postgres',
  };
}

export async function readsPhase(env: Environment, options: Options): Promise<Partial<Record<Read, Measurement>>> {
  const measured: Partial<Record<Read, Measurement>> = {};
  for (const read of options.reads) {
    const spec = readSpec(env, read, options);
    const response = await fetch(spec.url, { headers: spec.headers });
    if (response.status !== 200) throw new Error(`GET ${read} answered ${response.status}: ${await response.text()}`);
    measured[read] = await measure(`GET ${read} ${env.engine}`, spec, options);
  }
  return measured;
}
