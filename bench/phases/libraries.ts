import { onClose } from '../lib/environment';
import { describeRound, loadTogether, progress, summarise, type LoadSpec, type Measurement, type RoundResult } from '../lib/load';
import type { Options } from '../lib/options';
import { startServer, type ServerProcess } from '../lib/processes';
import { freshIngestBody } from '../lib/setup';
import type { Endpoints } from './layers';

/** The fixed layers of the real server's request path, by what LIBRARIES in bench/servers/express-libraries.ts calls them. */
export const LIBRARIES = {
  'request log (pino)': 'request-log',
  'rate limiter': 'rate-limit',
  'express-openapi-validator': 'validator',
  'all three': 'request-log,rate-limit,validator',
  // The validator's options, each changed alone (the server: formats in full, $refs bundled).
  "validator, validateFormats 'fast'": 'validator-formats-fast',
  'validator, validateFormats off': 'validator-no-formats',
  "validator, $refParser 'dereference'": 'validator-dereference',
} as const;
export type Library = keyof typeof LIBRARIES;
const LIBRARY_NAMES = Object.keys(LIBRARIES) as Library[];

export interface LibrariesResult {
  bare: Endpoints;
  with: Record<Library, Endpoints>;
}

export type LibraryServers = { bare: ServerProcess } & Record<Library, ServerProcess>;

export async function startLibraryServers(): Promise<LibraryServers> {
  const start = async (name: string, libraries: string) => {
    const server = await startServer({ name, entry: 'bench/servers/express-libraries.ts', env: { LIBRARIES: libraries }, readyPath: '/api/teams/1/config' });
    return { ...server, stop: onClose(() => server.stop()) };
  };
  const [bare, ...others] = await Promise.all([start('express-bare', ''), ...LIBRARY_NAMES.map((library) => start(`express-${LIBRARIES[library].replace(/,/g, '-')}`, LIBRARIES[library]))]);
  return { bare: bare!, ...Object.fromEntries(LIBRARY_NAMES.map((library, i) => [library, others[i]!])) } as LibraryServers;
}

/**
 * What the libraries cost by themselves: bare Express 5 answering GET config and POST ingest
 * with constant bodies, and the same app with each library (and all three) set up as the real
 * server sets it up. Rounds go round the servers in turn. No storage, no code of ours: whatever
 * these add is a floor under the real server's cost per request.
 */
export async function librariesPhase(servers: LibraryServers, options: Options): Promise<LibrariesResult> {
  try {
    const sides: Array<[string, ServerProcess]> = [['bare Express 5', servers.bare], ...LIBRARY_NAMES.map((library): [string, ServerProcess] => [`+ ${library}`, servers[library]])];
    const spec = (server: ServerProcess, endpoint: keyof Endpoints): LoadSpec => ({
      url: `${server.url}/api/teams/1/${endpoint}`,
      method: endpoint === 'ingest' ? 'POST' : 'GET',
      headers: { authorization: 'Bearer esk_bench' },
      body: endpoint === 'ingest' ? freshIngestBody : undefined,
      connections: options.connections,
      duration: options.duration,
      serverPid: server.pid,
    });
    const config = await inTurn('libraries GET config', sides.map(([name, server]) => [name, spec(server, 'config')]), options);
    const ingest = await inTurn('libraries POST ingest', sides.map(([name, server]) => [name, spec(server, 'ingest')]), options);
    const endpoints = (i: number): Endpoints => ({ ingest: ingest[i]!, config: config[i]! });
    return { bare: endpoints(0), with: Object.fromEntries(LIBRARY_NAMES.map((library, i) => [library, endpoints(i + 1)])) as Record<Library, Endpoints> };
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
  }
}

/**
 * Warm-up of each, then rounds taken in turn, so that drift favours none of them. A side of
 * several specs runs them at once, as one round (`loadTogether`); `onLoad` sees every run, the
 * warm-ups too.
 */
export async function inTurn(label: string, sides: Array<[string, LoadSpec | LoadSpec[]]>, options: Options, onLoad?: (round: RoundResult) => void): Promise<Measurement[]> {
  const run = async (spec: LoadSpec | LoadSpec[]) => {
    const round = await loadTogether([spec].flat());
    onLoad?.(round);
    return round;
  };
  for (const [, spec] of sides) await run([spec].flat().map((s) => ({ ...s, duration: options.warmup })));
  const rounds: RoundResult[][] = sides.map(() => []);
  for (let i = 0; i < options.rounds; i++) {
    for (const [s, [name, spec]] of sides.entries()) {
      const round = await run(spec);
      rounds[s]!.push(round);
      progress(`${label} ${name}: round ${i + 1}/${options.rounds}  ${describeRound(round)}`);
    }
  }
  return rounds.map(summarise);
}
