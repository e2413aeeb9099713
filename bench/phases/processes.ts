import pg from 'pg';
import { onClose, startRealServer } from '../lib/environment';
import type { LoadSpec, Measurement } from '../lib/load';
import type { Options } from '../lib/options';
import type { ServerProcess } from '../lib/processes';
import { bearer, createBenchTeam, EXPERIMENTS, freshIngestBody, type BenchTeam } from '../lib/setup';
import { scratchStorage, type ScratchStorage } from '../lib/storage';
import { BATCH_ITEMS, batchOf, checkIngest, HEALTH } from './ingest';
import { inTurn } from './libraries';

/** Server processes and teams at most: each side of the phase uses the first few. */
export const MOST_PROCESSES = 2;
export const MOST_TEAMS = 4;
const SIDES = [
  { processes: 1, teams: 1, split: false },
  { processes: MOST_PROCESSES, teams: 1, split: false },
  { processes: 1, teams: MOST_TEAMS, split: false },
  { processes: MOST_PROCESSES, teams: MOST_TEAMS, split: false },
  { processes: MOST_PROCESSES, teams: MOST_TEAMS, split: true },
] as const;

export interface ProcessesServers {
  scratch: ScratchStorage;
  servers: ServerProcess[];
  teams: BenchTeam[];
  close(): Promise<void>;
}

export interface ProcessesSide {
  processes: number;
  teams: number;
  /**
   * false: every process gets every team's ingests (a balancer's round robin), so each flush
   * takes every team's lock and the processes' flushes take turns. true: each process its own
   * share of the teams, as a balancer routing by team would send them.
   */
  split: boolean;
  /** Single ingests, every process's answers summed. */
  single: Measurement;
  /** Batches of BATCH_ITEMS: requests per second (× BATCH_ITEMS: items). */
  batch: Measurement;
}

/** What the teams' rows hold after the phase, against what the load generator saw accepted. */
export interface StoredCheck {
  /** Ingested items answered 2xx (a batch: its items), warm-ups and checks included. */
  accepted: number;
  /** Participants stored in the teams: each accepted item's, and those of requests still in flight when a run stopped. */
  stored: number;
  /** Items of the requests in flight when a run stopped: sent, never answered (autocannon drops them). */
  unanswered: number;
}

export interface ProcessesResult {
  /** autocannon connections in all, split evenly over the processes of a side. */
  connections: number;
  sides: ProcessesSide[];
  stored: StoredCheck;
}

/** MOST_PROCESSES servers on one scratch PostgreSQL database (one DATABASE_URL), with MOST_TEAMS bench teams. */
export async function startProcessesServers(options: Options): Promise<ProcessesServers> {
  const scratch = await scratchStorage('postgres');
  const drop = onClose(() => scratch.drop());
  const servers = await Promise.all(Array.from({ length: MOST_PROCESSES }, (_, i) => startRealServer(`processes-${i + 1}-postgres`, scratch, { cpuProf: options.cpuProf })));
  const teams: BenchTeam[] = [];
  for (let i = 0; i < MOST_TEAMS; i++) teams.push(await createBenchTeam(servers[0]!.url, scratch));
  return {
    scratch,
    servers,
    teams,
    async close() {
      await Promise.all(servers.map((server) => server.stop()));
      await drop();
    },
  };
}

/**
 * Ingest through one and through MOST_PROCESSES server processes on one PostgreSQL database,
 * for one team and for MOST_TEAMS teams: the same connections in all, split over the processes
 * (an autocannon each, run at the same time, answers summed); with several teams each request
 * takes the next team's ingest key, every team's on every process or, last, each process its
 * own share of them. Sides are taken in turn so that the growing database favours none of them.
 * Then every stored row is checked against what was accepted.
 */
export async function processesPhase(setup: ProcessesServers, options: Options): Promise<ProcessesResult> {
  try {
    const { servers, teams } = setup;
    for (const server of servers) for (const team of teams) await checkIngest(server.url, team);
    let accepted = servers.length * teams.length;
    let unanswered = 0;

    const measureSides = (label: string, suffix: string, body: () => string, items: number) =>
      inTurn(
        label,
        SIDES.map(({ processes, teams: count, split }): [string, LoadSpec[]] => [
          `${processes} process${processes > 1 ? 'es' : ''}, ${count} team${count > 1 ? 's' : ''}${split ? ' split over them' : ''}`,
          spreadOver(servers.slice(0, processes), teams.slice(0, count), split, suffix, body, options),
        ]),
        options,
        (round) => {
          accepted += round.ok * items;
          unanswered += round.unanswered * items;
        },
      );
    const single = await measureSides('processes postgres ingest', '', freshIngestBody, 1);
    const batch = await measureSides(`processes postgres ingest batch of ${BATCH_ITEMS}`, '/batch', batchOf(freshIngestBody), BATCH_ITEMS);
    const stored = await checkStored(setup, accepted, unanswered);
    return {
      connections: options.connections,
      sides: SIDES.map((side, i) => ({ ...side, single: single[i]!, batch: batch[i]! })),
      stored,
    };
  } finally {
    await setup.close();
  }
}

/**
 * One autocannon per process, the connections split evenly; with several teams each request takes
 * the next one's key — of all the teams, or with `split` of the process's share of them.
 */
function spreadOver(servers: ServerProcess[], allTeams: BenchTeam[], split: boolean, suffix: string, body: () => string, options: Options): LoadSpec[] {
  if (options.connections < servers.length) throw new Error(`--connections ${options.connections}: fewer than the ${servers.length} processes`);
  return servers.map((server, i) => {
    const teams = split ? allTeams.filter((_, t) => t % servers.length === i) : allTeams;
    let next = 0;
    const route = () => {
      const team = teams[next++ % teams.length]!;
      return { path: team.paths.ingest + suffix, headers: bearer(team.ingestKey) };
    };
    return {
      url: server.url + teams[0]!.paths.ingest + suffix,
      method: 'POST',
      headers: bearer(teams[0]!.ingestKey),
      route: teams.length > 1 ? route : undefined,
      body,
      // Summing to --connections: 10 over 2 processes is 5 and 5, 11 is 5 and 6.
      connections: Math.floor((options.connections + i) / servers.length),
      duration: options.duration,
      settle: server.url + HEALTH,
      serverPid: server.pid,
    };
  });
}

/**
 * Every ingest of the phase was a new participant with one event: each team's participants must
 * equal its ingest counter, its enrolments EXPERIMENTS.length per participant and the variants'
 * counters of them, its conversions the counters of conversions — counters that the processes
 * update concurrently. In all, the participants stored are those accepted, plus at most the
 * items of the requests in flight when a run stopped (autocannon drops their answers; the
 * server still stores them).
 */
async function checkStored(setup: ProcessesServers, accepted: number, unanswered: number): Promise<StoredCheck> {
  const client = new pg.Client({ connectionString: setup.scratch.options.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<Record<'team' | 'participants' | 'usage' | 'enrolments' | 'variant_participants' | 'daily_participants' | 'conversions' | 'counted_conversions', string>>(
      `select t.id as team,
         (select count(*) from participants x where x.team_id = t.id) as participants,
         (select coalesce(sum(count), 0) from ingest_usage x where x.team_id = t.id) as usage,
         (select count(*) from enrolments x where x.team_id = t.id) as enrolments,
         (select coalesce(sum(participants), 0) from variants x where x.team_id = t.id) as variant_participants,
         (select coalesce(sum(participants), 0) from daily_variant_counts x where x.team_id = t.id) as daily_participants,
         (select coalesce(sum(count), 0) from conversions x where x.team_id = t.id) as conversions,
         (select coalesce(sum(conversions), 0) from variant_event_counts x where x.team_id = t.id) as counted_conversions
       from teams t where t.id = any($1)`,
      [setup.teams.map((team) => team.id)],
    );
    const problems: string[] = [];
    let stored = 0;
    for (const row of rows) {
      const n = Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Number(value)])) as Record<keyof typeof row, number>;
      stored += n.participants;
      const expect = (what: string, value: number, wanted: number) => {
        if (value !== wanted) problems.push(`team ${n.team}: ${what} ${value}, not ${wanted}`);
      };
      expect('ingest counter', n.usage, n.participants);
      expect('enrolments', n.enrolments, EXPERIMENTS.length * n.participants);
      expect("variants' participant counters", n.variant_participants, n.enrolments);
      expect('daily participant counters', n.daily_participants, n.enrolments);
      expect('conversion counters', n.counted_conversions, n.conversions);
    }
    if (stored < accepted || stored > accepted + unanswered) {
      problems.push(`${stored} participants stored, ${accepted} accepted and ${unanswered} unanswered when runs stopped`);
    }
    if (problems.length > 0) throw new Error(`processes: what was stored does not add up:\n${problems.join('\n')}`);
    return { accepted, stored, unanswered };
  } finally {
    await client.end();
  }
}
