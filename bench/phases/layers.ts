import { startRealServer, type Environment } from '../lib/environment';
import { progress, type Measurement } from '../lib/load';
import type { Options } from '../lib/options';
import type { ServerProcess } from '../lib/processes';
import { bearer } from '../lib/setup';
import { ingestSpec } from './ingest';
import { inTurn } from './libraries';
import { readSpec } from './reads';

/** The layers of the real server that a setting turns off, and the settings that do. */
export const LAYERS = {
  'request validation': { VALIDATE_REQUESTS: 'false' },
  'request log (silenced)': { LOG_LEVEL: 'silent' },
  'rate limiter': { RATE_LIMIT_ENABLED: 'false' },
  'all three': { VALIDATE_REQUESTS: 'false', LOG_LEVEL: 'silent', RATE_LIMIT_ENABLED: 'false' },
} as const;
export type Layer = keyof typeof LAYERS;
const LAYER_NAMES = Object.keys(LAYERS) as Layer[];

export interface Endpoints {
  ingest: Measurement;
  config: Measurement;
}

export interface LayersResult {
  /** Whether the server honours VALIDATE_REQUESTS=false (it answers an unknown query parameter with 200). */
  knobHonoured: boolean;
  shipped: Endpoints;
  /** The same endpoints on servers with one layer (or all three) off. */
  without: Record<Layer, Endpoints>;
}

/** One more server per layer, on the environment's storage, with that layer off. */
export async function startLayerServers(env: Environment, options: Options): Promise<Record<Layer, ServerProcess>> {
  const servers = await Promise.all(
    LAYER_NAMES.map((layer) => startRealServer(`without-${layer.replace(/\W+/g, '-')}-${env.engine}`, env.scratch, { cpuProf: options.cpuProf, env: LAYERS[layer] })),
  );
  return Object.fromEntries(LAYER_NAMES.map((layer, i) => [layer, servers[i]!])) as Record<Layer, ServerProcess>;
}

/**
 * What each layer costs: ingest and config on the environment's server (everything on) and on
 * one server per layer turned off, all on the same storage. Rounds go round the servers so that
 * drift (a growing database, a warming disk cache) favours none of them.
 */
export async function layersPhase(env: Environment, without: Record<Layer, ServerProcess>, options: Options): Promise<LayersResult> {
  try {
    const unvalidated = without['request validation'];
    const probe = await fetch(`${unvalidated.url}${env.team.paths.config}?bench_unknown=1`, { headers: bearer(env.team.ingestKey) });
    const knobHonoured = probe.status === 200;
    if (!knobHonoured) progress(`layers ${env.engine}: VALIDATE_REQUESTS=false is not honoured (answered ${probe.status}); both sides validate`);
    const sides: Array<[string, Environment]> = [['everything on', env], ...LAYER_NAMES.map((layer): [string, Environment] => [`without ${layer}`, { ...env, server: without[layer] }])];
    const ingest = await inTurn(`ingest ${env.engine}`, sides.map(([name, e]) => [name, ingestSpec(e, options)]), options);
    const config = await inTurn(`GET config ${env.engine}`, sides.map(([name, e]) => [name, readSpec(e, 'config', options)]), options);
    const endpoints = (i: number): Endpoints => ({ ingest: ingest[i]!, config: config[i]! });
    return { knobHonoured, shipped: endpoints(0), without: Object.fromEntries(LAYER_NAMES.map((layer, i) => [layer, endpoints(i + 1)])) as Record<Layer, Endpoints> };
  } finally {
    await Promise.all(Object.values(without).map((server) => server.stop()));
  }
}
