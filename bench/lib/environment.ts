import { analyzeAsAutovacuumWould } from './autoanalyze';
import type { Engine } from './options';
import { startServer, type ServerProcess } from './processes';
import { createBenchTeam, type BenchTeam } from './setup';
import { scratchStorage, type ScratchStorage } from './storage';

/** The real server on its own scratch storage, with the bench team set up. */
export interface Environment {
  engine: Engine;
  scratch: ScratchStorage;
  server: ServerProcess;
  team: BenchTeam;
  /** KiB, as soon as the server answered, before any other request. */
  rssAtReadyKb: number;
  close(): Promise<void>;
}

export interface RealServerOptions {
  cpuProf: boolean;
  env?: Record<string, string>;
  nodeArgs?: string[];
  onStdoutLine?: (line: string) => void;
  /** Another checkout to run the server of (before/after figures); this repository by default. */
  cwd?: string;
}

const cleanups = new Set<() => Promise<void>>();

/** Stops every server and drops every scratch storage still open (also on Ctrl-C). */
export async function closeAll(): Promise<void> {
  for (const cleanup of [...cleanups].reverse()) await cleanup().catch((error) => console.error(error));
  cleanups.clear();
}

export function onClose(cleanup: () => Promise<void>): () => Promise<void> {
  const once = async () => {
    if (cleanups.delete(once)) await cleanup();
  };
  cleanups.add(once);
  return once;
}

/**
 * The rate limiter stays on, since its bookkeeping is part of a request's cost, but with budgets
 * no benchmark reaches: the defaults (60 000 a minute per credential) would answer 429 mid-run.
 */
export const UNREACHABLE_BUDGETS = { RATE_LIMIT_PER_CREDENTIAL: '1000000000', RATE_LIMIT_PER_ADDRESS: '1000000000' };

/** pid → server name of the servers run under --cpu-prof, whose profile files are named by pid. */
export const profiledServers = new Map<number, string>();

export async function startRealServer(name: string, scratch: ScratchStorage, options: RealServerOptions): Promise<ServerProcess> {
  // No --cpu-prof-name: tsx's loader thread would write its profile under the same name.
  const profile = options.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', 'bench/results'] : [];
  const server = await startServer({
    name,
    entry: 'server/main.ts',
    cwd: options.cwd,
    env: { ...UNREACHABLE_BUDGETS, ...scratch.env, ...options.env },
    nodeArgs: [...profile, ...(options.nodeArgs ?? [])],
    readyPath: '/api/health',
    onStdoutLine: options.onStdoutLine,
  });
  if (options.cpuProf) profiledServers.set(server.pid, name);
  const stop = onClose(() => server.stop());
  return { ...server, stop };
}

export async function startEnvironment(engine: Engine, name: string, options: RealServerOptions): Promise<Environment> {
  const scratch = await scratchStorage(engine);
  const drop = onClose(() => scratch.drop());
  const stopAnalyzing = onClose(scratch.options.databaseUrl ? await analyzeAsAutovacuumWould(scratch.options.databaseUrl) : async () => {});
  const server = await startRealServer(`${name}-${engine}`, scratch, options);
  const rssAtReadyKb = server.rssKb();
  const team = await createBenchTeam(server.url, scratch);
  return {
    engine,
    scratch,
    server,
    team,
    rssAtReadyKb,
    async close() {
      await server.stop();
      await stopAnalyzing();
      await drop();
    },
  };
}
