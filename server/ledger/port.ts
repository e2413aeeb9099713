import type { MetricType } from '../../domain/metric';
import type { RolloutArm } from '../../domain/rollout-arms';
import type { EnrolmentRow } from '../enrolments/store';
import type { ParticipantRow } from '../storage/schema';
import type { Db } from '../storage/database';
import type { LedgerChange } from './change';

/** team id → the month's accepted ingests. */
export type QuotaUse = Map<number, number>;

/** A participant named by an ingest of a flush. */
export interface NamedParticipant {
  team: number;
  key: string;
}

/** An idempotency key an ingest of a flush carries. */
export interface NamedKey {
  team: number;
  key: string;
}

/** How stored keys and the keys a flush asks for are matched: the team and the key. */
export const keyId = (team: number, key: string) => `${team}\u0000${key}`;

/** What a flush reads first, under its teams' locks. */
export interface FlushRead {
  /** team id → its config version. */
  versions: Map<number, number>;
  /** team id → the month's accepted ingests so far. */
  used: QuotaUse;
  /** The stored outcomes (IngestOutcome as JSON) of the asked idempotency keys still in their window, by `keyId(team, key)`. */
  keys: Map<string, string>;
}

/** The enrolments, exclusions, conversions, covariates and pre-exposure history of stored participants. */
export interface Histories {
  enrolments: Array<EnrolmentRow & { participant_id: number }>;
  exclusions: Array<{ participant_id: number; experiment_id: number }>;
  conversions: Array<{ participant_id: number; experiment_id: number; event_id: number; count: number; value: string | number }>;
  /** Each enrolment's frozen covariate x of an event (micro-units), where it is not 0. */
  covariates: Array<{ participant_id: number; experiment_id: number; event_id: number; x: string | number }>;
  /** What each did per event on the days before `before` (pre_exposure_activity, as the sweep left it), with the event's metric. */
  activity: Array<{ participant_id: number; event_id: number; day: string; count: number | string; value: string | number; type: MetricType; cap: number | null }>;
  /** Their exposures to running or paused rollouts, and their conversions of those rollouts' guardrail events. */
  rolloutExposures: Array<{ participant_id: number; rollout_id: number; arm: RolloutArm }>;
  rolloutConversions: Array<{ participant_id: number; rollout_id: number; event_id: number; count: number | string; value: string | number }>;
}

export const NO_HISTORIES: Histories = { enrolments: [], exclusions: [], conversions: [], covariates: [], activity: [], rolloutExposures: [], rolloutConversions: [] };

/** The stored participants a flush read, with their enrolments, exclusions and conversions. */
export interface StoredParticipants {
  rows: ParticipantRow[];
  histories: Histories;
}

/** What a flush asks for when it opens. */
export interface Opening {
  /** Its teams, in ascending order: the order their locks are taken in. */
  teams: number[];
  month: string;
  keys: NamedKey[];
  cutoff: string;
  /** The participants of the ingests it expects to accept (ingest/expected-participants.ts), distinct. */
  expected: NamedParticipant[];
  /** Its assumptions failed (commitAssuming): it is still in its transaction, under its locks, and reads from where it checked them. */
  afterAssumption: boolean;
}

/**
 * What a flush decided on without reading it (assumed-flushes.ts): each team's config version,
 * and quota use at the last flush this process saw; that no participant it names is stored yet,
 * nor any idempotency key it carries, since `cutoff`.
 */
export interface Assumption {
  versions: Map<number, number>;
  used: QuotaUse;
}

/** What a flush that decided on assumptions checks under its teams' locks before it writes. */
export interface AssumedChecks {
  month: string;
  cutoff: string;
  /** Each of its teams (ascending), the config version it decided at, the ingests it accepts and the least quota any of them was decided under (null: none). */
  teams: Array<{ id: number; version: number; accepted: number; limit: number | null }>;
  /** The participants it creates: none may be stored. */
  participants: NamedParticipant[];
  /** The idempotency keys it carries: none may be stored since `cutoff`. */
  keys: NamedKey[];
}

/** The participants' write model on one engine: what a flush reads, and the one writer of every change. Each is a constant number of statements whatever the number of ingests. */
export interface Ledger {
  /**
   * Opens the flush's transaction, taking every write lock a writer of these teams takes first,
   * and reads each team's config version and quota use this month, which of `keys` are stored
   * since `cutoff` (none asked: no more work) and the stored participants among `expected`.
   */
  open(connection: Db, opening: Opening): Promise<{ read: FlushRead; participants: StoredParticipants }>;
  /** The stored participants among `named` (distinct). */
  participants(connection: Db, named: NamedParticipant[]): Promise<StoredParticipants>;
  /** Writes what the flush decided — nothing when it accepted no ingest — and commits. Each caller's answer was decided before: nothing is read back. */
  commit(connection: Db, change: LedgerChange | undefined): Promise<void>;
  /** Writes a change in the caller's transaction, which holds the teams' write locks (an unenrolment, a participant's deletion). */
  write(connection: Db, change: LedgerChange): Promise<void>;
  /**
   * Where the engine has round trips to save: opens the flush's transaction, takes its teams'
   * locks, checks `checks` and, if they hold, writes and commits, all in one round trip, and
   * answers each team's quota use before the flush. If they do not hold, it answers nothing and
   * leaves the transaction open under its locks, for `open` with `afterAssumption`.
   */
  commitAssuming?(connection: Db, checks: AssumedChecks, change: LedgerChange | undefined): Promise<QuotaUse | undefined>;
  /**
   * Where one write lock serves the whole database, for every team and process (SQLite): a read
   * transaction — a snapshot, taking no lock — in which `open` reads what `open` reads. The flush
   * decides on it (conditions evaluated, variants chosen) before it takes the lock; under the lock
   * it reads again and writes what it decided if what that depended on still holds
   * (ingest/snapshot-check.ts), else decides again there.
   */
  snapshot?: { open: Ledger['open']; close(connection: Db): Promise<void> };
  /**
   * The next flush may open, on a connection of its own, while this one writes and commits: its
   * teams' locks, taken first when it opens, keep it from reading any team this one writes
   * before this one has committed (PostgreSQL). SQLite has one writer.
   */
  opensWhileWriting: boolean;
  /**
   * Rows a flush is expected to write (participants, enrolments, conversions, idempotency keys),
   * beyond which it takes no more ingests (ingest/flusher.ts): what another team's ingest, waiting
   * for the next flush, waits behind at most.
   */
  flushRows: number;
}
