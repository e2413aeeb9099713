import { onClose } from '../lib/environment';
import { measure, type Measurement } from '../lib/load';
import type { Options } from '../lib/options';
import { startServer, type ServerProcess } from '../lib/processes';
import { freshIngestBody } from '../lib/setup';

export interface Baselines {
  nodeGet: Measurement;
  nodePost: Measurement;
  expressGet: Measurement;
  expressPost: Measurement;
}

export interface BaselineServers {
  node: ServerProcess;
  express: ServerProcess;
}

export async function startBaselineServers(): Promise<BaselineServers> {
  const start = async (name: string, entry: string) => {
    const server = await startServer({ name, entry, readyPath: '/' });
    return { ...server, stop: onClose(() => server.stop()) };
  };
  const [node, express] = await Promise.all([start('node-http', 'bench/servers/node-http.ts'), start('express', 'bench/servers/express.ts')]);
  return { node, express };
}

/**
 * What this machine can do at all: bare node:http, and bare Express 5 (the framework ceiling),
 * for GET and for a POST of an ingest-shaped body with a fresh id, parsed as JSON.
 */
export async function baselinesPhase(servers: BaselineServers, options: Options): Promise<Baselines> {
  const measured: Partial<Record<keyof Baselines, Measurement>> = {};
  for (const name of ['node', 'express'] as const) {
    const label = name === 'node' ? 'node:http' : 'express';
    const shared = { url: `${servers[name].url}/`, connections: options.connections, duration: options.duration, serverPid: servers[name].pid };
    measured[`${name}Get`] = await measure(`baseline ${label} GET`, shared, options);
    measured[`${name}Post`] = await measure(`baseline ${label} POST`, { ...shared, method: 'POST', body: freshIngestBody }, options);
    await servers[name].stop();
  }
  return measured as Baselines;
}
