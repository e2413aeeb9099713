import type { AssignmentResult } from '../phases/assignment';
import type { Baselines } from '../phases/baselines';
import type { GrowthPoint, GrowthResult } from '../phases/growth';
import { BATCH_ITEMS, type IngestResult } from '../phases/ingest';
import { FLOOD_CONNECTIONS, type IsolationResult } from '../phases/isolation';
import { READS, type Read } from '../phases/reads';
import { mb, type SoakResult } from '../phases/soak';
import { LAYERS, type Endpoints, type Layer, type LayersResult } from '../phases/layers';
import { LIBRARIES, type LibrariesResult, type Library } from '../phases/libraries';
import { MOST_PROCESSES, MOST_TEAMS, type ProcessesResult, type ProcessesSide } from '../phases/processes';
import type { Measurement } from './load';
import type { Engine } from './options';
import type { ProfileLine } from './profile';
import { EXPERIMENTS } from './setup';
import { ratio, type Spread } from './stats';

export interface EngineResults {
  ingest?: IngestResult;
  reads?: Partial<Record<Read, Measurement>>;
  layers?: LayersResult;
  growth?: GrowthResult;
  isolation?: IsolationResult;
  processes?: ProcessesResult;
  soak?: SoakResult;
}

export interface Results {
  machine: Record<string, unknown>;
  options: Record<string, unknown>;
  baselines?: Baselines;
  libraries?: LibrariesResult;
  assignment?: AssignmentResult;
  engines: Partial<Record<Engine, EngineResults>>;
  targets: Target[];
  /** Figures reported to read, with no limit: ratios to bare Express and between the engines' throughput. */
  diagnostics: Diagnostic[];
  notes: string[];
  /** With --cpu-prof: the top self-time functions of each real server. */
  profiles?: Record<string, ProfileLine[]>;
}

export interface Target {
  name: string;
  engine?: Engine;
  value: number | undefined;
  limit: string;
  holds: boolean | undefined;
}

export interface Diagnostic {
  name: string;
  engine?: Engine;
  value: number | undefined;
}

/** Ratios of a measurement to the baselines of the same method: throughput and latency. */
export function ratiosOf(measurement: Measurement, method: 'GET' | 'POST', baselines: Baselines | undefined) {
  const express = method === 'GET' ? baselines?.expressGet : baselines?.expressPost;
  const node = method === 'GET' ? baselines?.nodeGet : baselines?.nodePost;
  return {
    rps_vs_express: ratio(measurement.rps.median, express?.rps.median),
    rps_vs_node_http: ratio(measurement.rps.median, node?.rps.median),
    p50_vs_express: ratio(measurement.p50.median, express?.p50.median),
    p99_vs_express: ratio(measurement.p99.median, express?.p99.median),
    p99_vs_node_http: ratio(measurement.p99.median, node?.p99.median),
    cpu_vs_express: ratio(measurement.cpuUs?.median, express?.cpuUs?.median),
  };
}

export function growthRatios(result: GrowthResult) {
  const of = (read: 'statistics' | 'config') => ({
    p50: ratio(result.large[read].p50.median, result.small[read].p50.median),
    p99: ratio(result.large[read].p99.median, result.small[read].p99.median),
  });
  return { statistics: of('statistics'), config: of('config') };
}

/** Ingest through MOST_PROCESSES processes ÷ through one, for one team and for MOST_TEAMS teams: single ingests and batches. */
export function processesRatios(result: ProcessesResult) {
  const of = (teams: number, split: boolean) => {
    const one = oneProcess(result, teams);
    const more = result.sides.find((s) => s.processes === MOST_PROCESSES && s.teams === teams && s.split === split);
    return { single: ratio(more?.single.rps.median, one?.single.rps.median), batch: ratio(more?.batch.rps.median, one?.batch.rps.median) };
  };
  return { one_team: of(1, false), several_teams: of(MOST_TEAMS, false), several_teams_split: of(MOST_TEAMS, true) };
}

function oneProcess(result: ProcessesResult, teams: number): ProcessesSide | undefined {
  return result.sides.find((s) => s.processes === 1 && s.teams === teams);
}

/**
 * The bounds the Limits of the contract are meant to keep (issue: one team must not starve the
 * others): a statistics read at the events limit, and another team's latency while the largest
 * allowed reads flood the server.
 */
export const STATISTICS_AT_LIMIT_MS = 50;
/** The rate limiter's cost per request in the libraries phase. */
const RATE_LIMITER_US = 15;
export const FLOODED_P99_MS = 500;

/**
 * The targets: bounds on what the service's own work decides — how reads grow with the data, a
 * batch against single ingests, PostgreSQL's tail against SQLite's, one team against the others,
 * memory over time, the rate limiter's and the assignment's own cost. Ratios to bare Express are
 * diagnostics instead (below): they measure the fixed layers the design names (Express, the
 * contract's validator, the request log) more than this service's work.
 */
export function evaluateTargets(results: Results): Target[] {
  const targets: Target[] = [];
  const add = (name: string, engine: Engine | undefined, value: number | undefined, limit: string, holds: (v: number) => boolean) =>
    targets.push({ name, engine, value, limit, holds: value === undefined ? undefined : holds(value) });
  for (const [engine, r] of Object.entries(results.engines) as Array<[Engine, EngineResults]>) {
    if (r.ingest) {
      add(`batch ingest items/s ÷ single ingests/s (${BATCH_ITEMS} items a batch)`, engine, ratio(r.ingest.batch.rps.median * BATCH_ITEMS, r.ingest.single.rps.median), '≥ 10', (v) => v >= 10);
    }
    const sqlite = results.engines.sqlite?.ingest?.single;
    if (r.ingest && engine === 'postgres' && sqlite) {
      add('PostgreSQL ingest p99 ÷ SQLite ingest p99', engine, ratio(r.ingest.single.p99.median, sqlite.p99.median), '≤ 2', (v) => v <= 2);
    }
    if (r.growth) {
      const growth = growthRatios(r.growth);
      const at = `@${count(r.growth.large.events)} ÷ @${count(r.growth.small.events)} events`;
      for (const read of ['statistics', 'config'] as const) {
        add(`${read} p50 ${at}`, engine, growth[read].p50, '≤ 2', (v) => v <= 2);
        add(`${read} p99 ${at}`, engine, growth[read].p99, '≤ 2', (v) => v <= 2);
      }
    }
    if (r.isolation) {
      const { statisticsAtLimit, other } = r.isolation;
      add(`statistics p99 at the ${r.isolation.largest.events}-event limit (ms)`, engine, statisticsAtLimit.p99.median, `≤ ${STATISTICS_AT_LIMIT_MS}`, (v) => v <= STATISTICS_AT_LIMIT_MS);
      for (const read of ['config', 'ingest'] as const) {
        add(`another team's ${read} p99 under a flood of the largest reads (ms)`, engine, other.flooded[read].p99.median, `≤ ${FLOODED_P99_MS}`, (v) => v <= FLOODED_P99_MS);
      }
    }
    if (r.soak) {
      add(`RSS after ${r.soak.seconds} s of ingest ÷ after warm-up`, engine, ratio(r.soak.rssAtEndKb, r.soak.rssAfterWarmupKb), '≤ 1.20', (v) => v <= 1.2);
      add('  live heap after a full GC, last ÷ first of the soak (leak check)', engine, ratio(r.soak.liveHeapAtEndMb, r.soak.liveHeapAfterWarmupMb), '≤ 1.20', (v) => v <= 1.2);
    }
  }
  const libraries = results.libraries;
  if (libraries) {
    for (const endpoint of ['config', 'ingest'] as const) {
      const us = cpuSaved(libraries.with['rate limiter'][endpoint], libraries.bare[endpoint]);
      add(`rate limiter: CPU µs added per ${endpoint} response (libraries phase)`, undefined, us, `≤ ${RATE_LIMITER_US}`, (v) => v <= RATE_LIMITER_US);
    }
  }
  if (results.assignment) {
    const { ours, growthbook } = results.assignment;
    add('assignment function ÷ GrowthBook#run (per second)', undefined, ratio(ours.perSecond.median, growthbook.perSecond.median), '≥ 1', (v) => v >= 1);
  }
  return targets;
}

/**
 * Diagnostics, reported without a limit: the service against bare Express (throughput, tail, and
 * the same in CPU terms — Express's CPU per response ÷ ours, what the throughput ratio would be
 * with the CPUs to the server alone), and PostgreSQL's ingest throughput against SQLite's. What
 * bounds them is mostly the fixed cost of the layers every request goes through and, on
 * PostgreSQL, round trips to another process; the libraries and layers phases take them apart.
 */
export function evaluateDiagnostics(results: Results): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  const add = (name: string, engine: Engine, value: number | undefined) => diagnostics.push({ name, engine, value });
  const cpuShare = (ratioToExpress: number | undefined) => (ratioToExpress === undefined ? undefined : 1 / ratioToExpress);
  for (const [engine, r] of Object.entries(results.engines) as Array<[Engine, EngineResults]>) {
    if (r.ingest) {
      const ingest = ratiosOf(r.ingest.single, 'POST', results.baselines);
      add('durable ingest req/s ÷ bare Express POST', engine, ingest.rps_vs_express);
      add('  same, as Express POST CPU/response ÷ ingest CPU/response', engine, cpuShare(ingest.cpu_vs_express));
    }
    for (const read of READS) {
      const measurement = r.reads?.[read];
      if (!measurement) continue;
      const ratios = ratiosOf(measurement, 'GET', results.baselines);
      add(`GET ${read} req/s ÷ bare Express GET`, engine, ratios.rps_vs_express);
      add('  same, as Express GET CPU/response ÷ its CPU/response', engine, cpuShare(ratios.cpu_vs_express));
      add(`GET ${read} p99 ÷ bare Express GET p99`, engine, ratios.p99_vs_express);
    }
    const sqlite = results.engines.sqlite?.ingest?.single;
    if (r.ingest && engine === 'postgres' && sqlite) {
      add('PostgreSQL ingest req/s ÷ SQLite ingest req/s', engine, ratio(r.ingest.single.rps.median, sqlite.rps.median));
    }
    if (r.processes) {
      const ratios = processesRatios(r.processes);
      const sides = [['one_team', '1 team'], ['several_teams', `${MOST_TEAMS} teams`], ['several_teams_split', `${MOST_TEAMS} teams split over the processes`]] as const;
      for (const [teams, label] of sides) {
        add(`ingest req/s, ${MOST_PROCESSES} processes ÷ 1, ${label} (one database, same CPUs)`, engine, ratios[teams].single);
        add(`  batch items/s, the same`, engine, ratios[teams].batch);
      }
    }
  }
  return diagnostics;
}

/** The readable report: one table per phase, then the targets. */
export function renderTables(results: Results): string {
  const out: string[] = [];
  const baselines = results.baselines;
  if (baselines) {
    const rows = (
      [
        ['node:http GET', baselines.nodeGet],
        ['node:http POST', baselines.nodePost],
        ['Express 5 GET', baselines.expressGet],
        ['Express 5 POST (express.json)', baselines.expressPost],
      ] as const
    ).map(([name, m]) => [name, rps(m.rps), ms(m.p50), ms(m.p99), cpu(m), failures(m)]);
    out.push(table('Baselines (bare servers, small JSON body)', ['server', 'req/s median (min–max)', 'p50 ms', 'p99 ms', 'CPU µs/response', 'failed'], rows));
  }
  const libraries = results.libraries;
  if (libraries) {
    const bare = libraries.bare;
    const side = (name: string, e: Endpoints) => [
      name,
      rps(e.config.rps),
      cpu(e.config),
      added(bare.config, e.config),
      times(ratio(e.config.rps.median, bare.config.rps.median)),
      rps(e.ingest.rps),
      cpu(e.ingest),
      added(bare.ingest, e.ingest),
      times(ratio(e.ingest.rps.median, bare.ingest.rps.median)),
    ];
    const lrows = [side('bare Express 5', bare), ...(Object.keys(LIBRARIES) as Library[]).map((library) => side(`+ ${library}`, libraries.with[library]))];
    out.push(
      table(
        'What the libraries cost — Express 5 answering GET config / POST ingest with constant bodies, each library set up as the server sets it up (rounds taken in turn)',
        ['server', 'config req/s', 'config CPU µs', 'µs added', 'req/s ÷ bare', 'ingest req/s', 'ingest CPU µs', 'µs added', 'req/s ÷ bare'],
        lrows,
      ),
    );
  }

  for (const [engine, r] of Object.entries(results.engines) as Array<[Engine, EngineResults]>) {
    const rows: string[][] = [];
    const row = (name: string, m: Measurement, method: 'GET' | 'POST') => {
      const ratios = ratiosOf(m, method, baselines);
      rows.push([
        name,
        rps(m.rps),
        ms(m.p50),
        ms(m.p99),
        times(ratios.rps_vs_express),
        times(ratios.rps_vs_node_http),
        times(ratios.p99_vs_express),
        cpu(m),
        databaseCpu(m),
        times(ratios.cpu_vs_express),
        failures(m),
      ]);
    };
    if (r.ingest) row('POST ingest (new participant + event)', r.ingest.single, 'POST');
    if (r.ingest) row(`POST ingest/batch (${BATCH_ITEMS} of them; req/s)`, r.ingest.batch, 'POST');
    if (r.ingest?.singleKeyed) row('POST ingest, with an idempotency key', r.ingest.singleKeyed, 'POST');
    if (r.ingest?.batchKeyed) row(`POST ingest/batch (${BATCH_ITEMS}, each with a key; req/s)`, r.ingest.batchKeyed, 'POST');
    for (const read of READS) if (r.reads?.[read]) row(`GET ${read}`, r.reads[read], 'GET');
    if (rows.length > 0) {
      out.push(
        table(
          `Ingest and reads — ${engine} (ratios to the baseline of the same method)`,
          ['endpoint', 'req/s median (min–max)', 'p50 ms', 'p99 ms', 'req/s ÷ Express', 'req/s ÷ node:http', 'p99 ÷ Express', 'CPU µs/response', 'database CPU µs/response', 'CPU ÷ Express', 'failed'],
          rows,
        ),
      );
    }
    if (r.layers) {
      const l = r.layers;
      const shipped = l.shipped;
      const side = (name: string, e: Endpoints) => [
        name,
        rps(e.ingest.rps),
        cpu(e.ingest),
        saved(shipped.ingest, e.ingest),
        rps(e.config.rps),
        cpu(e.config),
        saved(shipped.config, e.config),
      ];
      const lrows = [side('everything on (as shipped)', shipped), ...(Object.keys(LAYERS) as Layer[]).map((layer) => side(`without ${layer}`, l.without[layer]))];
      const title = `What each layer costs — ${engine} (servers on the same storage, rounds taken in turn)${l.knobHonoured ? '' : '  [VALIDATE_REQUESTS=false not honoured: both sides validate]'}`;
      out.push(table(title, ['server', 'ingest req/s', 'ingest CPU µs', 'µs saved', 'config req/s', 'config CPU µs', 'µs saved'], lrows));
    }
    if (r.growth) {
      const g = r.growth;
      const ratios = growthRatios(g);
      const grow = (name: 'statistics' | 'config') => {
        const point = (p: GrowthPoint) => `${ms(p[name].p50)} / ${ms(p[name].p99)}`;
        return [`GET ${name}`, point(g.small), point(g.large), times(ratios[name].p50), times(ratios[name].p99)];
      };
      out.push(
        table(
          `Growth — ${engine} (sequential requests; ${count(g.large.events)} events from ${count(g.seeding.participants)} participants, ${g.seeding.note} at ${count(Math.round(g.seeding.eventsPerSecond))} events/s)`,
          ['endpoint', `p50 / p99 ms @${count(g.small.events)}`, `p50 / p99 ms @${count(g.large.events)}`, 'p50 ratio', 'p99 ratio'],
          [grow('statistics'), grow('config')],
        ),
      );
    }
    if (r.isolation) {
      const i = r.isolation;
      const row = (name: string, m: Measurement) => [name, ms(m.p50), ms(m.p99), rps(m.rps)];
      out.push(
        table(
          `Isolation — ${engine} (a team at its limits: ${i.largest.events} events, config ${count(i.largest.configBytes)} bytes, statistics ${count(i.largest.statisticsBytes)} bytes; sequential requests; flood: ${FLOOD_CONNECTIONS} connections reading its config and statistics, ${count(Math.round(i.floodRps))} answers/s)`,
          ['request', 'p50 ms', 'p99 ms', 'req/s'],
          [
            row(`statistics of a variant at ${i.largest.events} events`, i.statisticsAtLimit),
            row("another team's config, alone", i.other.alone.config),
            row("another team's config, under the flood", i.other.flooded.config),
            row("another team's ingest, alone", i.other.alone.ingest),
            row("another team's ingest, under the flood", i.other.flooded.ingest),
          ],
        ),
      );
    }
    if (r.processes) out.push(processesTable(engine, r.processes));
    if (r.soak) {
      const s = r.soak;
      out.push(
        table(
          `Memory soak — ${engine} (${s.seconds} s of ingest at ${count(Math.round(s.load.rps))} req/s)`,
          ['', 'at start', 'after warm-up', 'at end', 'peak', 'end ÷ warm-up'],
          [
            ['RSS', mb(s.rssAtStartKb), mb(s.rssAfterWarmupKb), mb(s.rssAtEndKb), mb(s.rssPeakKb), times(ratio(s.rssAtEndKb, s.rssAfterWarmupKb))],
            [
              `live heap after a full GC (${s.fullCollections.length} in the soak; first, last)`,
              '',
              heapMb(s.liveHeapAfterWarmupMb),
              heapMb(s.liveHeapAtEndMb),
              heapMb(Math.max(...s.fullCollections.map(([, live]) => live))),
              times(ratio(s.liveHeapAtEndMb, s.liveHeapAfterWarmupMb)),
            ],
          ],
        ),
      );
    }
  }

  if (results.assignment) {
    const a = results.assignment;
    const contender = (name: string, c: AssignmentResult['ours']) => [
      name,
      `${count(Math.round(c.perSecond.median))} (${count(Math.round(c.perSecond.min))}–${count(Math.round(c.perSecond.max))})`,
      times(ratio(c.perSecond.median, a.growthbook.perSecond.median)),
      c.shares.map((share) => share.toFixed(1)).join(' / '),
    ];
    out.push(
      table(
        `Assignment in-process — '${a.experiment}', weights ${a.weights.join('/')}, ${count(a.participants)} participant ids`,
        ['assigner', 'assignments/s median (min–max)', '÷ GrowthBook#run', 'shares %'],
        [
          contender('assignVariant (SHA-256)', a.ours),
          contender('GrowthBook#run, one instance', a.growthbook),
          contender('GrowthBook, new instance each', a.growthbookPerInstance),
        ],
      ),
    );
  }

  for (const [file, lines] of Object.entries(results.profiles ?? {})) {
    out.push(table(`Self time — ${file}`, ['%', 'function', 'where'], lines.map((l) => [l.percent.toFixed(1), l.function, l.location])));
  }

  if (results.diagnostics.length > 0) {
    out.push(
      table(
        'Diagnostics (no limit: ratios to bare Express measure the fixed layers more than the service)',
        ['figure', 'engine', 'value'],
        results.diagnostics.map((d) => [d.name, d.engine ?? '', d.value === undefined ? 'n/a' : d.value.toFixed(2)]),
      ),
    );
  }
  out.push(
    table(
      'Targets',
      ['target', 'engine', 'value', 'limit', 'holds'],
      results.targets.map((t) => [t.name, t.engine ?? '', t.value === undefined ? 'n/a' : t.value.toFixed(2), t.limit, t.holds === undefined ? 'n/a' : t.holds ? 'yes' : 'NO']),
    ),
  );
  if (results.notes.length > 0) out.push(results.notes.map((note) => `* ${note}`).join('\n'));
  return out.join('\n\n');
}

function processesTable(engine: Engine, p: ProcessesResult): string {
  const rows = p.sides.map((side) => {
    const one = oneProcess(p, side.teams)!;
    const items = (s: Spread) => ({ median: s.median * BATCH_ITEMS, min: s.min * BATCH_ITEMS, max: s.max * BATCH_ITEMS });
    return [
      `${side.processes} × ${side.teams}${side.split ? ', teams split' : ''}`,
      rps(side.single.rps),
      ms(side.single.p99),
      cpu(side.single),
      times(ratio(side.single.rps.median, one.single.rps.median)),
      rps(items(side.batch.rps)),
      ms(side.batch.p99),
      times(ratio(side.batch.rps.median, one.batch.rps.median)),
      failed(side.single.non2xx + side.single.errors + side.batch.non2xx + side.batch.errors),
    ];
  });
  const { accepted, stored, unanswered } = p.stored;
  return [
    table(
      `Several processes on one database — ${engine} (${p.connections} connections in all, split over the processes; with several teams, each request the next team's ingest key — every team's on every process, or each process its own share ("teams split"); sides taken in turn)`,
      ['processes × teams', 'ingest req/s', 'p99 ms', 'CPU µs/response', '÷ 1 process', `batch (${BATCH_ITEMS}) items/s`, 'p99 ms', '÷ 1 process', 'failed'],
      rows,
    ),
    `Stored: ${count(stored)} participants for ${count(accepted)} accepted items and ${count(unanswered)} in requests unanswered when a run stopped; in every team, ingest counter = participants, enrolments = ${EXPERIMENTS.length} × participants = the variants' and the daily counters, conversions = their counters.`,
  ].join('\n');
}

function table(title: string, headers: string[], rows: string[][]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [title, line(headers), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function rps(s: Spread): string {
  return `${count(Math.round(s.median))} (${count(Math.round(s.min))}–${count(Math.round(s.max))})`;
}

function ms(s: Spread): string {
  const f = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
  return s.min === s.max ? f(s.median) : `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}

/** Server CPU time per response: median (min–max) µs. */
function cpu(m: Measurement): string {
  return micros(m.cpuUs);
}

/** The local PostgreSQL server's CPU time per response, where measured: median (min–max) µs. */
function databaseCpu(m: Measurement): string {
  return micros(m.databaseCpuUs);
}

function micros(s: Spread | undefined): string {
  return s === undefined ? 'n/a' : `${count(Math.round(s.median))} (${count(Math.round(s.min))}–${count(Math.round(s.max))})`;
}

function heapMb(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? 'n/a' : `${value.toFixed(1)} MiB`;
}

function times(value: number | undefined): string {
  return value === undefined ? 'n/a' : `${value.toFixed(2)}×`;
}

function failures(m: Measurement): string {
  return failed(m.non2xx + m.errors);
}

function failed(n: number): string {
  return n === 0 ? '0' : `${n}!`;
}

/** Every figure's ratio to its baseline, for the JSON (the tables show the same). */
export function ratioSummary(results: Results) {
  const engines: Record<string, unknown> = {};
  for (const [engine, r] of Object.entries(results.engines) as Array<[Engine, EngineResults]>) {
    engines[engine] = {
      ingest: r.ingest && ratiosOf(r.ingest.single, 'POST', results.baselines),
      batch_items_vs_single: r.ingest && ratio(r.ingest.batch.rps.median * BATCH_ITEMS, r.ingest.single.rps.median),
      keyed_vs_unkeyed: r.ingest?.singleKeyed && {
        single: ratio(r.ingest.singleKeyed.rps.median, r.ingest.single.rps.median),
        batch: ratio(r.ingest.batchKeyed!.rps.median, r.ingest.batch.rps.median),
      },
      reads: r.reads && Object.fromEntries(READS.filter((read) => r.reads![read]).map((read) => [read, ratiosOf(r.reads![read]!, 'GET', results.baselines)])),
      layers: r.layers && {
        ingest_validation_on_vs_off: ratio(r.layers.shipped.ingest.rps.median, r.layers.without['request validation'].ingest.rps.median),
        config_validation_on_vs_off: ratio(r.layers.shipped.config.rps.median, r.layers.without['request validation'].config.rps.median),
        ingest_cpu_us_saved: savedByLayer(r.layers, 'ingest'),
        config_cpu_us_saved: savedByLayer(r.layers, 'config'),
      },
      growth: r.growth && growthRatios(r.growth),
      processes: r.processes && processesRatios(r.processes),
      soak: r.soak && {
        rss_end_vs_warmup: ratio(r.soak.rssAtEndKb, r.soak.rssAfterWarmupKb),
        live_heap_end_vs_warmup: ratio(r.soak.liveHeapAtEndMb, r.soak.liveHeapAfterWarmupMb),
      },
    };
  }
  const a = results.assignment;
  const l = results.libraries;
  const byLibrary = (endpoint: keyof Endpoints, figure: (bare: Measurement, with_: Measurement) => number | undefined) =>
    Object.fromEntries((Object.keys(LIBRARIES) as Library[]).map((library) => [library, figure(l!.bare[endpoint], l!.with[library][endpoint])]));
  return {
    libraries: l && {
      config_cpu_us_added: byLibrary('config', (bare, with_) => cpuSaved(with_, bare)),
      config_rps_vs_bare: byLibrary('config', (bare, with_) => ratio(with_.rps.median, bare.rps.median)),
      ingest_cpu_us_added: byLibrary('ingest', (bare, with_) => cpuSaved(with_, bare)),
      ingest_rps_vs_bare: byLibrary('ingest', (bare, with_) => ratio(with_.rps.median, bare.rps.median)),
    },
    engines,
    assignment: a && {
      ours_vs_growthbook: ratio(a.ours.perSecond.median, a.growthbook.perSecond.median),
      ours_vs_growthbook_per_instance: ratio(a.ours.perSecond.median, a.growthbookPerInstance.perSecond.median),
    },
  };
}

/** Server CPU µs per response that turning a layer off saves (negative: it cost nothing measurable). */
function cpuSaved(shipped: Measurement, without: Measurement): number | undefined {
  const on = shipped.cpuUs?.median;
  const off = without.cpuUs?.median;
  return on === undefined || off === undefined ? undefined : on - off;
}

function saved(shipped: Measurement, without: Measurement): string {
  const us = cpuSaved(shipped, without);
  return us === undefined ? 'n/a' : `${Math.round(us)} (${Math.round((100 * us) / shipped.cpuUs!.median)} %)`;
}

/** Server CPU µs per response that a library adds to bare Express. */
function added(bare: Measurement, with_: Measurement): string {
  const us = cpuSaved(with_, bare);
  return us === undefined ? 'n/a' : `${Math.round(us)} (+${Math.round((100 * us) / bare.cpuUs!.median)} %)`;
}

function savedByLayer(layers: LayersResult, endpoint: keyof Endpoints): Record<string, number | undefined> {
  return Object.fromEntries((Object.keys(LAYERS) as Layer[]).map((layer) => [layer, cpuSaved(layers.shipped[endpoint], layers.without[layer][endpoint])]));
}
