import type { MetricType } from '../../domain/metric';
import type { DayActivity } from '../../domain/pre-exposure';
import type { RolloutArm } from '../../domain/rollout-arms';
import type { EnrolmentRow } from '../enrolments/store';
import type { ParticipantRow } from '../storage/schema';

/**
 * What participants did, as data: the change an ingest flush, an unenrolment or a participant's
 * deletion makes to the participants' tables and their counters. One writer per engine applies it
 * (sqlite.ts, postgres.ts); the counters it moves are computed from it once (counters.ts).
 */
export interface LedgerChange {
  at: string;
  /** The quota month of `at` (ingest_usage). */
  month: string;
  /** The participants it names, by participantKey: created (`isNew`), changed, or only read. */
  participants: Map<string, ParticipantState>;
  /** Enrolments it adds, in the order they were made: a participant's assignments are answered in it. */
  enrolments: Enrolled[];
  /** Conversions it moves, by participant and `experimentId:eventId`, each from its total before to its total after. */
  conversions: Map<string, ConversionMove>;
  /** Enrolments it removes with their conversions: taken back from the counters, or kept in them (intention to treat). */
  withdrawals: Withdrawal[];
  /** Experiments participants may never enter again. */
  exclusions: Exclusion[];
  /** Exposures to safe rollouts it adds: each a participant's first to its rollout, in its arm. */
  rolloutExposures: RolloutExposure[];
  /** Guardrail conversions it moves in rollouts' arms, by participant and `rolloutId:eventId`, each from its total before to its total after. */
  rolloutConversions: Map<string, RolloutConversionMove>;
  /** What participants did on the change's UTC day, by participant and event, whether enrolled or not: the pre-exposure history (CUPED) it adds to. */
  activity: Map<string, Activity>;
  /** team id → ingests it accepts. */
  quota: Map<number, number>;
  /** The idempotency keys of its accepted ingests; a key past its window (created before `keyCutoff`) is replaced. */
  keys: StoredKey[];
  keyCutoff: string;
}

/** A participant as a change knows it: stored already (`row.id`), or to be inserted by it. */
export interface ParticipantState {
  row: ParticipantRow;
  isNew: boolean;
  /** notes / attributes to write to an existing row. */
  changed: boolean;
  enrolments: EnrolmentRow[];
  excluded: Set<number>;
  /** `experimentId:eventId` → conversions so far and the sum of their values (micro-units). */
  conversions: Map<string, ConversionTotal>;
  /** `experimentId:eventId` → the covariate x (micro-units) frozen when it enrolled; absent: 0. */
  covariates: Map<string, bigint>;
  /** event id → what it did on the days before the change's day (its pre-exposure history), with the event's metric. */
  history: Map<number, EventHistory>;
  /** rollout id → the arm of its exposure to the rollout. */
  rollouts: Map<number, RolloutArm>;
  /** `rolloutId:eventId` → its conversions of a guardrail event since its exposure to the rollout. */
  rolloutConversions: Map<string, ConversionTotal>;
}

export interface EventHistory {
  metric: { type: MetricType; cap: number | null };
  days: DayActivity[];
}

/** An enrolment's covariate of one event (micro-units); an event it did nothing of in the window has x = 0 and no covariate. */
export interface Covariate {
  eventId: number;
  x: bigint;
}

export interface ConversionTotal {
  count: number;
  value: bigint;
}

export interface Enrolled {
  state: ParticipantState;
  teamId: number;
  experimentId: number;
  variantId: number;
  /** Its covariates, frozen now: its counters gain Σx and Σx². */
  covariates: Covariate[];
}

/** A participant's conversions of an event in an experiment, from `before` (stored: count > 0) to `after` (none: the row goes). */
export interface ConversionMove {
  state: ParticipantState;
  teamId: number;
  experimentId: number;
  eventId: number;
  /** The participant's variant in the experiment: whose counters move. */
  variantId: number;
  metric: { type: MetricType; cap: number | null };
  before: ConversionTotal;
  after: ConversionTotal;
  /** The enrolment's covariate for the event: Σxy moves by x × the change of y. */
  x: bigint;
}

/** A stored participant's enrolment removed with its conversions; `takenBack`: its participant and conversions leave the counters. */
export interface Withdrawal {
  teamId: number;
  participantId: number;
  experimentId: number;
  variantId: number;
  takenBack: boolean;
  /** The enrolment's covariates: taken back with it (Σx, Σx²), and their rows removed. */
  covariates: Covariate[];
}

export interface RolloutExposure {
  state: ParticipantState;
  teamId: number;
  rolloutId: number;
  arm: RolloutArm;
}

/** An exposed participant's conversions of a rollout's guardrail event, from `before` to `after`: its arm's counters move. */
export interface RolloutConversionMove {
  state: ParticipantState;
  teamId: number;
  rolloutId: number;
  arm: RolloutArm;
  eventId: number;
  metric: { type: MetricType; cap: number | null };
  before: ConversionTotal;
  after: ConversionTotal;
}

/** A participant's events of one event on the change's day: their number and value sum (micro-units). */
export interface Activity {
  state: ParticipantState;
  teamId: number;
  eventId: number;
  count: number;
  value: bigint;
}

export interface Exclusion {
  teamId: number;
  participantId: number;
  experimentId: number;
}

/** A key to store with the outcome (IngestOutcome as JSON) its ingest is answered. */
export interface StoredKey {
  teamId: number;
  key: string;
  outcome: string;
}

export const participantKey = (teamId: number, key: string) => `${teamId}\u0000${key}`;

export const NO_CONVERSIONS: ConversionTotal = { count: 0, value: 0n };

/** A change that does nothing yet, at `at`. */
export function emptyChange(at: string, month: string, keyCutoff: string): LedgerChange {
  return { at, month, participants: new Map(), enrolments: [], conversions: new Map(), withdrawals: [], exclusions: [], rolloutExposures: [], rolloutConversions: new Map(), activity: new Map(), quota: new Map(), keys: [], keyCutoff };
}

/** A participant as a change first knows it: its row, nothing of its histories yet. */
export function participantState(row: ParticipantRow, isNew: boolean): ParticipantState {
  return { row, isNew, changed: false, enrolments: [], excluded: new Set(), conversions: new Map(), covariates: new Map(), history: new Map(), rollouts: new Map(), rolloutConversions: new Map() };
}
