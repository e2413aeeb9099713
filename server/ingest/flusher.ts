import type { Db } from '../storage/database';
import type { components } from '../../generated/api';
import { AssumedFlushes } from './assumed-flushes';
import { expectedParticipants } from './expected-participants';
import type { Ledger, QuotaUse } from '../ledger/port';
import { flushIngests, type IngestJob } from './flush';

type IngestOutcome = components['schemas']['IngestOutcome'];

/** Ingests a flush takes at most, accepted or refused. */
export const MAX_FLUSH = 500;

type Enqueue = (job: Omit<IngestJob, 'resolve' | 'reject'>) => Promise<IngestOutcome>;

/**
 * Collects the ingests that arrive while a flush runs and flushes them next, like the group
 * commit (storage/group-commit.ts) does for other units: one transaction — one commit — per
 * flush. Each team's ingests wait in their own queue, in the order they came; a flush takes the
 * teams in turn, one ingest of each per round, until Ledger.flushRows or MAX_FLUSH, every waiting team's
 * first ingest always. A team whose batch would write many rows (many running experiments, a
 * large batch) is so split across flushes, and a single ingest of another team that arrives
 * meanwhile joins the next one instead of waiting for the whole batch.
 * One flush opens at a time, and the next once it is done; or, where the engine allows it
 * (Ledger.opensWhileWriting), while it writes and commits — once it has read all it
 * reads — if more than a flush's worth of ingests waits then, so that the next flush's
 * decisions overlap this one's write (two flushes at most). Opened early with fewer waiting, the next would
 * take fewer ingests than it would once this one is done, and flushes of single ingests would
 * become more and smaller (bench/results/2026-11-25-postgres-foreign-keys-once.md: single ingests fell by a fifth). Where the engine
 * can check assumptions (Ledger.commitAssuming), a flush of participants this process
 * has not seen decides on what it last saw (assumed-flushes.ts) and writes in one round trip; the
 * next, opened early, then decides while this one writes.
 */
export function ingestFlusher(db: Db, statements: Ledger, keyWindowMs: number): Enqueue {
  const queues = new Map<number, IngestJob[]>();
  const used: QuotaUse = new Map();
  const assumed = statements.commitAssuming ? new AssumedFlushes() : undefined;
  let opening = false;
  let running = 0;
  let checking = false;
  const flushIfDue = () => {
    if (opening || queues.size === 0) return;
    if (running === 0 || (running === 1 && statements.opensWhileWriting && moreThanAFlushWaits(queues, used, statements.flushRows))) void flush();
  };
  async function flush(): Promise<void> {
    opening = true;
    running++;
    let stillOpening = true;
    const opened = () => {
      if (!stillOpening) return;
      stillOpening = false;
      opening = false;
      flushIfDue();
    };
    // Let the requests that arrived meanwhile be read and queued first: better-sqlite3 answers
    // without yielding to the event loop, so flush after flush would otherwise starve them.
    await new Promise((resolve) => setImmediate(resolve));
    const jobs = nextFlush(queues, used, statements.flushRows);
    const writing = (participants: string[]) => {
      assumed?.remember(participants);
      opened();
    };
    const seen = await flushIngests(db, statements, jobs, { keyWindowMs, expected: expectedParticipants(jobs, used), assumption: assumed?.assumption(jobs, used), writing });
    if (seen.assumed) assumed!.settled(new Set(jobs.map((job) => job.team.id)), seen.assumed === 'held');
    for (const [team, count] of seen.used) {
      if (!used.has(team) && used.size >= MAX_TEAMS_SEEN) used.clear();
      used.set(team, count);
    }
    running--;
    opened();
    flushIfDue();
  }
  return (job) =>
    new Promise<IngestOutcome>((resolve, reject) => {
      let queue = queues.get(job.team.id);
      if (!queue) queues.set(job.team.id, (queue = []));
      queue.push({ ...job, resolve, reject });
      if (running === 0) return flushIfDue();
      // While a flush runs, one look per turn of the event loop: a batch queues all its items at once.
      if (checking) return;
      checking = true;
      queueMicrotask(() => {
        checking = false;
        flushIfDue();
      });
    });
}

const MAX_TEAMS_SEEN = 10_000;

/**
 * The next flush's ingests, taken from the queues team by team in turn; a team left waiting goes
 * to the back of the turn. `used` is each team's quota use as the last flush saw it.
 */
export function nextFlush(queues: Map<number, IngestJob[]>, used: QuotaUse, flushRows: number): IngestJob[] {
  const jobs: IngestJob[] = [];
  for (const [team, n] of takenFor(queues, used, flushRows)) {
    const queue = queues.get(team)!;
    jobs.push(...queue.splice(0, n));
    queues.delete(team);
    if (queue.length > 0) queues.set(team, queue);
  }
  return jobs;
}

/** Whether more ingests wait than the next flush would take: a flush opened now is as full as one opened later. */
export function moreThanAFlushWaits(queues: Map<number, IngestJob[]>, used: QuotaUse, flushRows: number): boolean {
  const taken = takenFor(queues, used, flushRows);
  return [...queues].some(([team, queue]) => queue.length > (taken.get(team) ?? 0));
}

/** How many of each team's waiting ingests the next flush takes. */
function takenFor(queues: Map<number, IngestJob[]>, used: QuotaUse, flushRows: number): Map<number, number> {
  const taken = new Map<number, number>();
  let rows = 0;
  let count = 0;
  for (let round = 0, took = true; took && count < MAX_FLUSH; round++) {
    took = false;
    for (const [team, queue] of queues) {
      const next = taken.get(team) ?? 0;
      if (next >= queue.length || count >= MAX_FLUSH) continue;
      const expected = expectedRows(queue[next]!, used);
      if (round > 0 && (expected === undefined || rows + expected > flushRows)) continue;
      rows += expected ?? 1;
      count++;
      taken.set(team, next + 1);
      took = true;
    }
  }
  return taken;
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
  if (input.event !== undefined && context.unknown.has('event', input.event)) return 0;
  const perExperiment = (input.enrol === false ? 0 : 1) + (input.event === undefined ? 0 : 1);
  const own = input.idempotency_key === undefined ? 1 : 2;
  if (input.experiment === undefined) return own + context.running.length * perExperiment;
  return context.running.some((experiment) => experiment.key === input.experiment) ? own + perExperiment : 0;
}
