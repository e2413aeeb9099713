import { HttpError } from '../http/errors';
import type { Db } from '../storage/database';
import type { components } from '../../generated/api';
import { expectedParticipants } from './expected';
import { flushIngests, type FlushStatements, type IngestJob, type QuotaUse } from './set-based';

type IngestOutcome = components['schemas']['IngestOutcome'];

/**
 * Rows a flush is expected to write (enrolments and conversions), beyond which it takes no more
 * ingests: what another team's ingest, waiting for the next flush, waits behind at most. About
 * 10 ms of writing on SQLite, 30 ms on PostgreSQL (bench/README.md, isolation).
 */
export const FLUSH_ROWS = 1000;
/** Ingests a flush takes at most, accepted or refused. */
export const MAX_FLUSH = 500;

type Enqueue = (job: Omit<IngestJob, 'resolve' | 'reject'>) => Promise<IngestOutcome>;

/**
 * Collects the ingests that arrive while a flush runs and flushes them next, like the group
 * commit (storage/group-commit.ts) does for other units: one transaction — one commit — per
 * flush. Each team's ingests wait in their own queue, in the order they came; a flush takes the
 * teams in turn, one ingest of each per round, until FLUSH_ROWS or MAX_FLUSH, every waiting team's
 * first ingest always. A team whose batch would write many rows (many running experiments, a
 * large batch) is so split across flushes, and a single ingest of another team that arrives
 * meanwhile joins the next one instead of waiting for the whole batch.
 */
export function ingestFlusher(db: Db, statements: FlushStatements, keyWindowMs: number): Enqueue {
  const queues = new Map<number, IngestJob[]>();
  const used: QuotaUse = new Map();
  let running = false;
  async function drain(): Promise<void> {
    while (queues.size > 0) {
      // Let the requests that arrived meanwhile be read and queued first: better-sqlite3 answers
      // without yielding to the event loop, so flush after flush would otherwise starve them.
      await new Promise((resolve) => setImmediate(resolve));
      const jobs = nextFlush(queues, used);
      for (const [team, count] of await flushIngests(db, statements, jobs, keyWindowMs, expectedParticipants(jobs, used))) {
        if (!used.has(team) && used.size >= MAX_TEAMS_SEEN) used.clear();
        used.set(team, count);
      }
    }
    running = false;
  }
  return (job) =>
    new Promise<IngestOutcome>((resolve, reject) => {
      let queue = queues.get(job.team.id);
      if (!queue) queues.set(job.team.id, (queue = []));
      queue.push({ ...job, resolve, reject });
      if (!running) {
        running = true;
        void drain();
      }
    });
}

const MAX_TEAMS_SEEN = 10_000;

/**
 * The next flush's ingests, taken from the queues team by team in turn; a team left waiting goes
 * to the back of the turn. `used` is each team's quota use as the last flush saw it.
 */
export function nextFlush(queues: Map<number, IngestJob[]>, used: QuotaUse): IngestJob[] {
  const taken = new Map<number, number>();
  let rows = 0;
  let count = 0;
  for (let round = 0, took = true; took && count < MAX_FLUSH; round++) {
    took = false;
    for (const [team, queue] of queues) {
      const next = taken.get(team) ?? 0;
      if (next >= queue.length || count >= MAX_FLUSH) continue;
      const expected = expectedRows(queue[next]!, used);
      if (round > 0 && (expected === undefined || rows + expected > FLUSH_ROWS)) continue;
      rows += expected ?? 1;
      count++;
      taken.set(team, next + 1);
      took = true;
    }
  }
  const jobs: IngestJob[] = [];
  for (const [team, n] of taken) {
    const queue = queues.get(team)!;
    jobs.push(...queue.splice(0, n));
    queues.delete(team);
    if (queue.length > 0) queues.set(team, queue);
  }
  return jobs;
}

/**
 * The rows an ingest is expected to write, from its team's last context: an enrolment in each
 * running experiment it may enter (none with `enrol: false`), a conversion in each too with an
 * event, and its idempotency key; none when it will be
 * refused (the quota was used up at the last flush, or it names an event or experiment known to
 * be refused). Unknown before the team's first flush on this server: such ingests are taken one
 * per flush until it is known.
 */
function expectedRows(job: IngestJob, used: QuotaUse): number | undefined {
  const { team, input } = job;
  const context = job.contexts.latest(team.id);
  if (!context) return undefined;
  if (team.ingest_limit !== null && (used.get(team.id) ?? 0) >= team.ingest_limit) return 0;
  if (input.event !== undefined && context.events.get(input.event) instanceof HttpError) return 0;
  const perExperiment = (input.enrol === false ? 0 : 1) + (input.event === undefined ? 0 : 1);
  const own = input.idempotency_key === undefined ? 1 : 2;
  if (input.experiment === undefined) return own + context.running.length * perExperiment;
  return context.running.some((experiment) => experiment.key === input.experiment) ? own + perExperiment : 0;
}
