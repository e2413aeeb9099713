import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { components } from '../../generated/api';
import type { Storage } from '../storage/database';
import { removeInBatches } from '../storage/sweep';
import { now } from '../storage/values';

type IngestOutcome = components['schemas']['IngestOutcome'];

/** An idempotency key an ingest of a flush carries. */
export interface NamedKey {
  team: number;
  key: string;
}

/** A key to store with the outcome (IngestOutcome as JSON) its ingest is answered. */
export interface StoredKey {
  teamId: number;
  key: string;
  outcome: string;
}

/** What a keyed ingest is, as far as keys go: one of a flush's jobs. */
interface Keyed {
  team: { id: number };
  input: { idempotency_key?: string };
}

/** How stored keys and the keys a flush asks for are matched: the team and the key. */
export const keyId = (team: number, key: string) => `${team}\u0000${key}`;

/** The oldest creation time a key stored at `at` still makes a replay with. */
export function keyCutoff(at: string, windowMs: number): string {
  return new Date(Date.parse(at) - windowMs).toISOString();
}

/**
 * The idempotency keys of one flush's ingests, taken in their order: an ingest whose key is
 * stored already, or was accepted earlier in this flush, is a replay of that one; the first
 * accepted ingest with a key stores it. A refused ingest keeps nothing, so a later one with its
 * key is decided anew. The flush holds its teams' write locks, so no other flush of these
 * teams, in any process, stores a key between the read of the stored keys and this flush's
 * commit; the primary key (team, key) keeps each key once whatever happens.
 */
export class KeyedItems<Job extends Keyed> {
  /** The distinct keys to look up; empty when no ingest carries one (the flush then reads nothing more). */
  readonly named: NamedKey[] = [];
  readonly #first = new Map<string, Job>();
  readonly #replays = new Map<Job, string | Job>();

  constructor(jobs: Job[]) {
    const seen = new Set<string>();
    for (const { team, input } of jobs) {
      const key = input.idempotency_key;
      if (key === undefined || seen.has(keyId(team.id, key))) continue;
      seen.add(keyId(team.id, key));
      this.named.push({ team: team.id, key });
    }
  }

  /** Whether `job` replays a stored key (its outcome, from `stored`) or an ingest accepted earlier in the flush. */
  isReplay(job: Job, stored: Map<string, string>): boolean {
    const key = job.input.idempotency_key;
    if (key === undefined) return false;
    const id = keyId(job.team.id, key);
    const first = stored.get(id) ?? this.#first.get(id);
    if (first === undefined) return false;
    this.#replays.set(job, first);
    return true;
  }

  /** `job` was accepted: its key, if any, is stored with it, and later ingests carrying it replay it. */
  admitted(job: Job): void {
    const key = job.input.idempotency_key;
    if (key !== undefined) this.#first.set(keyId(job.team.id, key), job);
  }

  toStore(accepted: Map<Job, IngestOutcome>): StoredKey[] {
    return [...this.#first.values()].map((job) => ({ teamId: job.team.id, key: job.input.idempotency_key!, outcome: JSON.stringify(accepted.get(job)!) }));
  }

  /** What a replay is answered: the stored outcome, or that of the ingest of this flush it replays. */
  replayed(job: Job, accepted: Map<Job, IngestOutcome>): IngestOutcome {
    const first = this.#replays.get(job)!;
    return typeof first === 'string' ? (JSON.parse(first) as IngestOutcome) : accepted.get(first)!;
  }
}

/** Keys removed by one statement at most: a sweep never holds the write lock (SQLite) or many row locks (PostgreSQL) for long. */
const SWEEP_BATCH = 5000;
/** How often a sweep runs: hourly, or once per window when the window is shorter. */
const SWEEP_EVERY_MS = 3_600_000;

/**
 * Removes the keys created before `cutoff`, in statements of SWEEP_BATCH keys; answers how
 * many. A key past its window makes no replay any more (the flush reads only keys created
 * since its cutoff, and stores over an older one), so removing it changes no answer. On
 * PostgreSQL the rows a flush holds are skipped (SKIP LOCKED): the sweep never waits for a
 * flush, so the two never deadlock, and a skipped key goes at the next sweep.
 */
export async function removeExpiredKeys(storage: Storage, cutoff: string): Promise<number> {
  return removeInBatches(SWEEP_BATCH, () =>
    storage.engine === 'postgres'
      ? sql`delete from ingest_keys where (team_id, key) in (
          select team_id, key from ingest_keys where created_at < ${cutoff}::timestamptz limit ${SWEEP_BATCH} for update skip locked)`.execute(storage.db)
      : sql`delete from ingest_keys where rowid in (select rowid from ingest_keys where created_at < ${cutoff} limit ${SWEEP_BATCH})`.execute(storage.db),
  );
}

/**
 * Every server process sweeps the keys past their window: hourly (or once per window, when
 * INGEST_KEY_WINDOW_SECONDS is shorter), starting one period after start-up. Two processes
 * sweeping at once remove each key once. Answers how to stop it.
 */
export function sweepIngestKeys(storage: Storage, windowMs: number, logger: Logger): () => void {
  let sweeping = false;
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    removeExpiredKeys(storage, keyCutoff(now(), windowMs))
      .then((removed) => {
        if (removed > 0) logger.debug({ removed }, 'expired ingest keys removed');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'removing expired ingest keys failed; the next sweep tries again'))
      .finally(() => {
        sweeping = false;
      });
  }, Math.min(windowMs, SWEEP_EVERY_MS));
  timer.unref();
  return () => clearInterval(timer);
}
