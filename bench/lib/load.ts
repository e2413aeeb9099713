import autocannon from 'autocannon';
import { cpuMsOf, databaseCpuMs } from './processes';
import { percentile, spread, type Spread } from './stats';

export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A fresh body for every request (e.g. a new participant id). */
  body?: () => string;
  connections: number;
  /** Seconds. */
  duration: number;
  /**
   * Fetched after the run: answers once the server has worked off the requests still queued
   * when the load stopped, so that they do not overlap the next run (on SQLite, two processes
   * writing at once fail with SQLITE_BUSY).
   */
  settle?: string;
  /** The server's pid: its CPU time per response is measured too. */
  serverPid?: number;
  /** Measure the local PostgreSQL server's CPU time per response too (databaseCpuMs). */
  databaseCpu?: boolean;
  /** Where each request goes and with which credential (e.g. several teams' in turn): `url`'s path and `headers` otherwise. */
  route?: () => { path: string; headers: Record<string, string> };
}

export interface RoundResult {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  /** Answers other than 2xx by status code: a benchmark of error answers is worthless. */
  failures: Record<string, number>;
  errors: number;
  /** Requests sent that had no answer when the run stopped: the server may still carry them out. */
  unanswered: number;
  /**
   * Microseconds of the server's CPU time (user + system) per 2xx response. Unlike throughput
   * and latency, it hardly moves when other work on the machine takes the CPUs away.
   */
  cpuUs?: number;
  /** Microseconds of the local PostgreSQL server's CPU time per 2xx response, when measured. */
  databaseCpuUs?: number;
}

export interface Measurement {
  /** 2xx responses per second. */
  rps: Spread;
  /** Milliseconds, of 2xx responses. */
  p50: Spread;
  p99: Spread;
  cpuUs?: Spread;
  databaseCpuUs?: Spread;
  non2xx: number;
  errors: number;
  rounds: RoundResult[];
}

/** What one autocannon run saw, before it is summed up with the runs it ran beside. */
interface Observed {
  latencies: number[];
  seconds: number;
  non2xx: number;
  failures: Record<string, number>;
  errors: number;
  unanswered: number;
  cpuMs?: number;
  databaseCpuMs?: number;
}

/** One autocannon run. */
export async function load(spec: LoadSpec, onResponse?: () => void): Promise<RoundResult> {
  return roundOf([await observe(spec, onResponse)]);
}

/**
 * Several autocannon runs at once (e.g. one per server process) as one round: answers per second
 * and the servers' CPU time summed, latencies pooled.
 */
export async function loadTogether(specs: LoadSpec[]): Promise<RoundResult> {
  return roundOf(await Promise.all(specs.map((spec) => observe(spec))));
}

/**
 * Latencies are taken from autocannon's per-response event with their full hrtime resolution:
 * its own histogram keeps whole milliseconds, too coarse for sub-millisecond baselines.
 */
async function observe(spec: LoadSpec, onResponse?: () => void): Promise<Observed> {
  const latencies: number[] = [];
  let non2xx = 0;
  const failures: Record<string, number> = {};
  const { body: nextBody, route } = spec;
  let settle!: (error: Error | null, result: autocannon.Result) => void;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    settle = (error, result) => (error ? reject(error) : resolve(result));
  });
  const cpuAtStart = spec.serverPid === undefined ? undefined : cpuMsOf(spec.serverPid);
  const databaseCpuAtStart = spec.databaseCpu ? databaseCpuMs() : undefined;
  const started = performance.now();
  const perRequest = (request: autocannon.Request): autocannon.Request => {
    const routed = route?.();
    return {
      ...request,
      ...(nextBody ? { body: nextBody() } : {}),
      ...(routed ? { path: routed.path, headers: { ...request.headers, ...routed.headers } } : {}),
    };
  };
  const options: autocannon.Options = {
    url: spec.url,
    method: spec.method ?? 'GET',
    headers: { ...(nextBody ? { 'content-type': 'application/json' } : {}), ...spec.headers },
    connections: spec.connections,
    duration: spec.duration,
    requests: nextBody || route ? [{ setupRequest: perRequest }] : undefined,
  };
  // With a callback autocannon returns its instance, whose events we need.
  const instance = autocannon(options, (error, result) => settle(error, result));
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    else {
      non2xx++;
      failures[statusCode] = (failures[statusCode] ?? 0) + 1;
    }
    onResponse?.();
  });
  const result = await done;
  const seconds = (performance.now() - started) / 1000;
  if (spec.settle) await settled(spec.settle);
  const cpuMs = cpuAtStart === undefined ? undefined : cpuMsOf(spec.serverPid!) - cpuAtStart;
  const databaseCpu = databaseCpuAtStart === undefined ? undefined : databaseCpuMs() - databaseCpuAtStart;
  const errors = result.errors + result.timeouts;
  const unanswered = Math.max(0, result.requests.sent - latencies.length - non2xx - errors);
  return { latencies, seconds, non2xx, failures, errors, unanswered, cpuMs, databaseCpuMs: databaseCpu };
}

function roundOf(runs: Observed[]): RoundResult {
  const sum = (figure: (run: Observed) => number) => runs.reduce((total, run) => total + figure(run), 0);
  const ok = sum((run) => run.latencies.length);
  const failures: Record<string, number> = {};
  for (const run of runs) for (const [code, n] of Object.entries(run.failures)) failures[code] = (failures[code] ?? 0) + n;
  const sorted = Float64Array.from(runs.flatMap((run) => run.latencies)).sort();
  const cpuMeasured = runs.every((run) => run.cpuMs !== undefined);
  return {
    rps: sum((run) => run.latencies.length / run.seconds),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    ok,
    non2xx: sum((run) => run.non2xx),
    failures,
    errors: sum((run) => run.errors),
    unanswered: sum((run) => run.unanswered),
    cpuUs: !cpuMeasured || ok === 0 ? undefined : (1000 * sum((run) => run.cpuMs!)) / ok,
    // Runs side by side measure the same database over about the same time: the longest measure, not their sum.
    databaseCpuUs: ok === 0 || !runs.every((run) => run.databaseCpuMs !== undefined) ? undefined : (1000 * Math.max(...runs.map((run) => run.databaseCpuMs!))) / ok,
  };
}

/**
 * Waits for an answer from `url`. Once more if the first try fails: fetch may pick a pooled
 * keep-alive connection that the server is closing at that moment (its keep-alive timeout).
 */
async function settled(url: string): Promise<void> {
  try {
    await (await fetch(url)).arrayBuffer();
  } catch {
    await (await fetch(url)).arrayBuffer();
  }
}

/** Unmeasured warm-up, then `rounds` measured runs; one progress line per round. */
export async function measure(label: string, spec: LoadSpec, options: { rounds: number; warmup: number }): Promise<Measurement> {
  if (options.warmup > 0) await load({ ...spec, duration: options.warmup });
  const rounds: RoundResult[] = [];
  for (let i = 0; i < options.rounds; i++) {
    const round = await load(spec);
    rounds.push(round);
    progress(`${label}: round ${i + 1}/${options.rounds}  ${describeRound(round)}`);
  }
  return summarise(rounds);
}

export function summarise(rounds: RoundResult[]): Measurement {
  return {
    rps: spread(rounds.map((r) => r.rps)),
    p50: spread(rounds.map((r) => r.p50)),
    p99: spread(rounds.map((r) => r.p99)),
    cpuUs: rounds.every((r) => r.cpuUs !== undefined) ? spread(rounds.map((r) => r.cpuUs!)) : undefined,
    databaseCpuUs: rounds.every((r) => r.databaseCpuUs !== undefined) ? spread(rounds.map((r) => r.databaseCpuUs!)) : undefined,
    non2xx: rounds.reduce((sum, r) => sum + r.non2xx, 0),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    rounds,
  };
}

export function describeRound(round: RoundResult): string {
  const codes = Object.entries(round.failures).map(([code, n]) => `${n}× ${code}`);
  if (round.errors > 0) codes.push(`${round.errors} connection errors`);
  const failed = codes.length > 0 ? `  (FAILED: ${codes.join(', ')})` : '';
  const cpu =
    (round.cpuUs === undefined ? '' : `  server CPU ${Math.round(round.cpuUs)} µs/response`) +
    (round.databaseCpuUs === undefined ? '' : `, database ${Math.round(round.databaseCpuUs)}`);
  return `${Math.round(round.rps).toLocaleString('en-US')} req/s  p50 ${round.p50.toFixed(2)} ms  p99 ${round.p99.toFixed(2)} ms${cpu}${failed}`;
}

export function progress(line: string): void {
  const elapsed = (performance.now() / 1000).toFixed(0).padStart(4);
  console.log(`[${elapsed}s] ${line}`);
}
