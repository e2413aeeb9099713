import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  /** Resident set size in KiB, from /proc/<pid>/status. */
  rssKb(): number;
  stop(): Promise<void>;
}

export interface ServerSpec {
  name: string;
  /** Entry file relative to the repository root (or `cwd`), run by `node --import tsx`. */
  entry: string;
  /** Another checkout to run it from (before/after profiles); this repository by default. */
  cwd?: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  readyPath: string;
  /** Each line the server writes to stdout (otherwise discarded), e.g. with `--trace-gc`. */
  onStdoutLine?: (line: string) => void;
}

// Settings the real server reads: never inherited from the caller's shell.
const SERVER_SETTINGS = /^(PORT|HOST|DATA_DIR|DATABASE_URL|LOG_LEVEL|VALIDATE_RESPONSES|VALIDATE_REQUESTS|TRUST_PROXY|RATE_LIMIT_\w+)$/;

/** A port nothing listens on right now: bind port 0, read it, release it. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const READY_TIMEOUT_MS = 120_000;

/**
 * Starts a server as a child process on a free loopback port and waits until `readyPath`
 * answers 200. `node --import tsx` rather than the tsx CLI, which would put a wrapper process
 * between us and the server, and the RSS we read would be the wrapper's.
 */
export async function startServer(spec: ServerSpec): Promise<ServerProcess> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (SERVER_SETTINGS.test(name)) delete env[name];
  Object.assign(env, { LOG_LEVEL: 'info', ...spec.env, PORT: String(port), HOST: '127.0.0.1' });
  const child = spawn(process.execPath, [...(spec.nodeArgs ?? []), '--import', 'tsx', spec.entry], {
    cwd: spec.cwd ?? ROOT,
    env,
    stdio: ['ignore', spec.onStdoutLine ? 'pipe' : 'ignore', 'pipe'],
  });
  if (spec.onStdoutLine && child.stdout) createInterface({ input: child.stdout }).on('line', spec.onStdoutLine);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;

  // Generous: on a busy 2-core machine, loading the server's TypeScript alone can take half a minute.
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${spec.name} exited with ${child.exitCode} before it was ready:\n${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${spec.name} was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${stderr}`);
    }
    if (await answers(url + spec.readyPath)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  return {
    name: spec.name,
    url,
    pid: child.pid!,
    rssKb: () => rssKbOf(child.pid!),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * Milliseconds of CPU time (user + system) the process has used, from /proc/<pid>/stat, whose
 * figures are in clock ticks of 1/100 s (USER_HZ on Linux).
 */
export function cpuMsOf(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The fields of /proc/<pid>/stat after the command name, which is in parentheses and may hold spaces: utime is [11], stime [12], cutime [13], cstime [14]. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The processes' sum at the last reading, and what readings lost to a restart of the server. */
const databaseReadings = { last: 0, lost: 0 };

/**
 * Milliseconds of CPU time the local PostgreSQL server's processes (backends, WAL writer and the
 * rest: every process named `postgres`) have used, with that of their children that have ended
 * (a backend whose connection closed: its parent's cutime and cstime): what a database-bound
 * request costs beyond the server's own CPU, when the database runs on the same machine. The sum
 * only goes back when the server restarts (a test stopping it, say): the total keeps what the
 * ended server had used, so a difference of two readings is never negative.
 */
export function databaseCpuMs(): number {
  let sum = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8') !== 'postgres\n') continue;
      const fields = statFields(Number(entry));
      sum += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
    } catch {
      // The process ended meanwhile.
    }
  }
  databaseReadings.lost += Math.max(0, databaseReadings.last - sum);
  databaseReadings.last = sum;
  return sum + databaseReadings.lost;
}

export function rssKbOf(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}
