import { CompiledQuery } from 'kysely';
import type { components } from '../../generated/api';
import type { ConditionAttributes } from '../domain/conditions';
import { admits, placeParticipant, type Candidate } from '../domain/eligibility';
import { metricValue, sumChange, toMicros } from '../domain/metric';
import { exact } from '../storage/exact-sums';
import { toEnrolment, type EnrolmentRow } from '../enrolments/store';
import type { EventRow } from '../events/store';
import type { ExperimentRow } from '../experiments/store';
import { targetingOf } from '../experiments/targeting';
import { Conflict, HttpError, QuotaExceeded } from '../http/errors';
import { toParticipant, type ParticipantInput, type ParticipantRow } from '../participants/store';
import type { Db } from '../storage/database';
import { now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { requireVariant } from '../variants/service';
import type { ResolvedVariant } from '../variants/store';
import { contextAt, eventOf, experimentOf, variantsIn, type IngestContext, type IngestContexts } from './context';
import { keyCutoff, KeyedItems, type NamedKey, type StoredKey } from './keys';
import { quotaMonth } from './quota';
import { snapshotOf, stillHolds, type Snapshot } from './snapshot-check';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];

/** One ingest waiting for its flush, and what its caller is told once the flush has committed. */
export interface IngestJob {
  team: TeamRow;
  contexts: IngestContexts;
  input: IngestRequest;
  resolve: (outcome: IngestOutcome) => void;
  reject: (error: unknown) => void;
}

/** What a flush reads first, under its teams' locks. */
export interface FlushRead {
  /** team id → its config version. */
  versions: Map<number, number>;
  /** team id → the month's accepted ingests so far. */
  used: Map<number, number>;
  /** The stored outcomes (IngestOutcome as JSON) of the asked idempotency keys still in their window, by `keyId(team, key)`. */
  keys: Map<string, string>;
}

/** The enrolments, exclusions and conversions of stored participants. */
export interface Histories {
  enrolments: Array<EnrolmentRow & { participant_id: number }>;
  exclusions: Array<{ participant_id: number; experiment_id: number }>;
  conversions: Array<{ participant_id: number; experiment_id: number; event_id: number; count: number; value: string | number }>;
}

/** A participant named by an ingest of a flush. */
export interface NamedParticipant {
  team: number;
  key: string;
}

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
  /** The participants of the ingests it expects to accept (expected.ts), distinct. */
  expected: NamedParticipant[];
  /** Its assumptions failed (commitAssuming): it is still in its transaction, under its locks, and reads from where it checked them. */
  afterAssumption: boolean;
}

/**
 * What a flush decided on without reading it (assumptions.ts): each team's config version, and
 * quota use at the last flush this process saw; that no participant it names is stored yet, nor
 * any idempotency key it carries, since `cutoff`.
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

/** What differs between engines: the SQL of a flush, each a constant number of statements whatever the number of ingests. */
export interface FlushStatements {
  /**
   * Opens the flush's transaction, taking every write lock a writer of these teams takes first,
   * and reads each team's config version and quota use this month, which of `keys` are stored
   * since `cutoff` (none asked: no more work) and the stored participants among `expected`.
   */
  open(connection: Db, opening: Opening): Promise<{ read: FlushRead; participants: StoredParticipants }>;
  /** The stored participants among `named` (distinct). */
  participants(connection: Db, named: NamedParticipant[]): Promise<StoredParticipants>;
  /** Writes what the flush decided — nothing when it accepted no ingest — and commits. Each caller's answer was decided before: nothing is read back. */
  commit(connection: Db, flush: Flush | undefined): Promise<void>;
  /**
   * Where the engine has round trips to save: opens the flush's transaction, takes its teams'
   * locks, checks `checks` and, if they hold, writes and commits, all in one round trip, and
   * answers each team's quota use before the flush. If they do not hold, it answers nothing and
   * leaves the transaction open under its locks, for `open` with `afterAssumption`.
   */
  commitAssuming?(connection: Db, checks: AssumedChecks, flush: Flush | undefined): Promise<QuotaUse | undefined>;
  /**
   * Where one write lock serves the whole database, for every team and process (SQLite): a read
   * transaction — a snapshot, taking no lock — in which `open` reads what `open` reads. The flush
   * decides on it (conditions evaluated, variants chosen) before it takes the lock; under the lock
   * it reads again and writes what it decided if what that depended on still holds
   * (snapshot-check.ts), else decides again there.
   */
  snapshot?: { open: FlushStatements['open']; close(connection: Db): Promise<void> };
  /**
   * The next flush may open, on a connection of its own, while this one writes and commits: its
   * teams' locks, taken first when it opens, keep it from reading any team this one writes
   * before this one has committed (PostgreSQL). SQLite has one writer.
   */
  opensWhileWriting: boolean;
  /**
   * Rows a flush is expected to write (participants, enrolments, conversions, idempotency keys),
   * beyond which it takes no more ingests (ingest/turns.ts): what another team's ingest, waiting
   * for the next flush, waits behind at most.
   */
  flushRows: number;
}

const ROLLBACK = CompiledQuery.raw('rollback');

/** What a flush is given besides its ingests. */
export interface FlushOptions {
  keyWindowMs: number;
  /** The participants of the ingests it expects to accept (expected.ts), distinct. */
  expected: NamedParticipant[];
  /** What it may decide on without reading it first, where the engine can check it (assumptions.ts). */
  assumption?: Assumption;
  /** Called once it has read all it reads, as its write is sent, with the participants (participantKey) its accepted ingests name. */
  writing?: (participants: string[]) => void;
}

/** What a flush leaves its flusher: its teams' quota use after it, and whether it decided on an assumption that held. */
export interface FlushSeen {
  used: QuotaUse;
  assumed?: 'held' | 'changed';
}

/**
 * A flush of concurrent ingests in a number of statements that does not grow with their number.
 * Under the write locks of their teams (so no other writer of these teams' rows runs meanwhile,
 * in any process), it reads each team's config version and quota use in one query (with the
 * stored ones among the ingests' idempotency keys), and decides which ingests are replays of a
 * stored key — answered its stored outcome, nothing else done — and which are refused — their
 * own 404, 409 or 402, storing nothing of them — from the team's cached context, with no query
 * per ingest. It reads the participants — their enrolments, exclusions and conversions too —
 * of the ingests it expects to accept (expected.ts) with the teams, and of any other it accepts
 * once decided. It decides each accepted ingest in order exactly as a single ingest alone
 * would be decided, writes what they change (a statement per table at most) and commits once:
 * each caller is answered after the commit.
 * Given an assumption the engine can check, it decides first, on the assumption, and sends the
 * check, the write and the commit at once; where the check fails it reads as above, still under
 * its locks, and decides again. Where the engine has one write lock for the whole database
 * (FlushStatements.snapshot), it reads and decides in a snapshot first, without the lock, and
 * under it reads again: what it decided is written if what it read still holds, else it decides
 * again there.
 */
export async function flushIngests(db: Db, statements: FlushStatements, jobs: IngestJob[], options: FlushOptions): Promise<FlushSeen> {
  let flushed: Flushed = { outcomes: [], used: new Map() };
  try {
    await db.connection().execute(async (connection) => {
      try {
        flushed = await ingestAll(connection, statements, jobs, options);
      } catch (error) {
        await connection.executeQuery(ROLLBACK).catch(() => {});
        throw error;
      }
    });
  } catch (error) {
    for (const job of jobs) job.reject(error);
    return { used: new Map() };
  }
  for (const { job, outcome } of flushed.outcomes) {
    if (outcome instanceof HttpError) job.reject(outcome);
    else job.resolve(outcome);
  }
  return { used: flushed.used, assumed: flushed.assumed };
}

/** team id → the month's accepted ingests, this flush's included. */
export type QuotaUse = Map<number, number>;

/** What a flush decided for each of its ingests, in their order, and its teams' quota use after it. */
interface Flushed extends FlushSeen {
  outcomes: Array<{ job: IngestJob; outcome: IngestOutcome | HttpError }>;
}

/** What one ingest resolved to before anything is read of its participant. */
interface Resolved {
  job: IngestJob;
  given: ParticipantInput;
  event?: EventRow;
  target?: ExperimentRow;
  experiments: ExperimentRow[];
  /** The team's running experiments: whose exclusion groups a participant's enrolments hold. */
  running: ExperimentRow[];
  variants: Map<number, ResolvedVariant[]>;
  chosen?: ResolvedVariant;
  /** What the event carried, in micro-units (value events only). */
  value?: bigint;
}

/** A participant as the flush knows it: stored already (`id`), or to be inserted by it. */
export interface ParticipantState {
  row: ParticipantRow;
  isNew: boolean;
  /** notes / attributes to write to an existing row. */
  changed: boolean;
  enrolments: EnrolmentRow[];
  excluded: Set<number>;
  /** `experimentId:eventId` → conversions so far and the sum of their values (micro-units). */
  conversions: Map<string, ConversionTotal>;
}

export interface ConversionTotal {
  count: number;
  value: bigint;
}

/** A flush: its clock, what it has read, and what the ingests decided so far will write. */
export interface Flush {
  at: string;
  month: string;
  participants: Map<string, ParticipantState>;
  enrolments: Array<{ state: ParticipantState; teamId: number; experimentId: number; variantId: number }>;
  /** variant id → participants it gains. */
  variantParticipants: Map<number, { teamId: number; added: number }>;
  /** participant (team, key) and `experimentId:eventId` → conversions and value (micro-units) it gains; `stored`: whether its row is stored already (else the flush inserts it). */
  conversions: Map<string, { state: ParticipantState; teamId: number; experimentId: number; eventId: number; added: number; value: bigint; stored: boolean }>;
  /** `variantId:eventId` → conversions, unique conversions, Σy and Σy² (micro-units) it gains. */
  eventCounts: Map<string, { teamId: number; variantId: number; eventId: number; conversions: number; unique: number; sumY: bigint; sumY2: bigint }>;
  /** team id → ingests it accepts. */
  quota: Map<number, number>;
  /** The idempotency keys of its accepted ingests, with what each is answered; a key past its window (created before `keyCutoff`) is replaced. */
  keys: StoredKey[];
  keyCutoff: string;
}

async function ingestAll(db: Db, statements: FlushStatements, jobs: IngestJob[], { keyWindowMs, expected, assumption, writing = () => {} }: FlushOptions): Promise<Flushed> {
  const at = now();
  const month = quotaMonth(at);
  const cutoff = keyCutoff(at, keyWindowMs);
  const teams = [...new Set(jobs.map((job) => job.team.id))].sort((a, b) => a - b);
  let afterAssumption = false;
  if (assumption && statements.commitAssuming) {
    const keyed = new KeyedItems(jobs);
    const decided = await decide(db, jobs, keyed, { versions: assumption.versions, used: new Map(assumption.used), keys: new Map() }, at);
    // A 402 decided on another process's old quota use could be wrong: read it first.
    if (![...decided.refused.values()].some((refusal) => refusal instanceof QuotaExceeded)) {
      const { flush, accepted } = settle(decided, { at, month, cutoff, participants: new Map() });
      writing([...flush.participants.keys()]);
      const checks: AssumedChecks = { month, cutoff, teams: assumedTeams(teams, assumption, decided), participants: namedIn(flush), keys: keyed.named };
      const usedBefore = await statements.commitAssuming(db, checks, decided.admitted.length > 0 ? flush : undefined);
      if (usedBefore) {
        const used = new Map(teams.map((team) => [team, (usedBefore.get(team) ?? 0) + (flush.quota.get(team) ?? 0)]));
        return { outcomes: outcomesOf(jobs, decided, accepted), used, assumed: 'held' };
      }
      afterAssumption = true;
    }
  }
  const opening = { teams, month, cutoff, expected, afterAssumption };
  const early = statements.snapshot && !afterAssumption ? await decideOnSnapshot(db, statements, jobs, opening, at) : undefined;
  const keyed = new KeyedItems(jobs);
  const { read, participants: stored } = await statements.open(db, { ...opening, keys: keyed.named });
  const gone = teams.find((team) => !read.versions.has(team));
  if (gone !== undefined) throw new Error(`No team ${gone}.`);
  if (early && stillHolds(early.seen, jobs, read, await readParticipants(db, statements, early.decided.admitted, expected, stored))) {
    writing([...early.flush.participants.keys()]);
    await statements.commit(db, early.decided.admitted.length > 0 ? early.flush : undefined);
    const used = new Map([...read.used].map(([team, count]) => [team, count + (early.decided.quota.get(team) ?? 0)]));
    return { outcomes: outcomesOf(jobs, early.decided, early.accepted), used };
  }
  const decided = await decide(db, jobs, keyed, read, at);
  const participants = await readParticipants(db, statements, decided.admitted, expected, stored);
  const { flush, accepted } = settle(decided, { at, month, cutoff, participants });
  writing([...flush.participants.keys()]);
  await statements.commit(db, decided.admitted.length > 0 ? flush : undefined);
  return { outcomes: outcomesOf(jobs, decided, accepted), used: read.used, ...(afterAssumption && { assumed: 'changed' as const }) };
}

/**
 * The flush decided in a snapshot (FlushStatements.snapshot), outside the write lock, with what
 * the decision depended on; none if a team is gone (the flush under the lock says so).
 */
async function decideOnSnapshot(db: Db, statements: FlushStatements, jobs: IngestJob[], opening: Omit<Opening, 'keys'>, at: string) {
  const keyed = new KeyedItems(jobs);
  const { read, participants: stored } = await statements.snapshot!.open(db, { ...opening, keys: keyed.named });
  let decided: Decided;
  let participants: Map<string, ParticipantState>;
  let seen: Snapshot;
  try {
    if (opening.teams.some((team) => !read.versions.has(team))) return undefined;
    const usedBefore = new Map(read.used);
    decided = await decide(db, jobs, keyed, read, at);
    participants = await readParticipants(db, statements, decided.admitted, opening.expected, stored);
    seen = snapshotOf({ ...read, used: usedBefore }, participants, decided.admitted.map((unit) => participantKey(unit.job.team.id, unit.given.key)));
  } finally {
    await statements.snapshot!.close(db);
  }
  return { seen, decided, ...settle(decided, { at, month: opening.month, cutoff: opening.cutoff, participants }) };
}

/** A flush's decisions: its accepted ingests in order, its refused ones, and what each team accepts. */
interface Decided {
  keyed: KeyedItems<IngestJob>;
  admitted: Resolved[];
  refused: Map<IngestJob, HttpError>;
  quota: Map<number, number>;
}

/**
 * Each ingest decided in order against `read`: a replay of a stored key, refused (404, 409, 402),
 * or accepted — counted against the quota use in `read`, which it raises.
 */
async function decide(db: Db, jobs: IngestJob[], keyed: KeyedItems<IngestJob>, read: FlushRead, at: string): Promise<Decided> {
  // Each team's context once per flush, at the config version read under the team's lock: it holds for the whole flush.
  const contexts = new Map<number, IngestContext>();
  const decided: Decided = { keyed, admitted: [], refused: new Map(), quota: new Map() };
  for (const job of jobs) {
    // A replay is decided first: nothing is checked, stored or charged for it.
    if (keyed.isReplay(job, read.keys)) continue;
    let context = contexts.get(job.team.id);
    if (!context) contexts.set(job.team.id, (context = await contextAt(db, job.contexts, job.team, read.versions.get(job.team.id)!)));
    const unit = await resolve(db, job, context).catch((error: unknown) => (error instanceof HttpError ? error : Promise.reject(error)));
    const refusal = unit instanceof HttpError ? unit : admission(read.used, unit, at);
    if (refusal) decided.refused.set(job, refusal);
    else {
      decided.admitted.push(unit as Resolved);
      keyed.admitted(job);
      decided.quota.set(job.team.id, (decided.quota.get(job.team.id) ?? 0) + 1);
    }
  }
  return decided;
}

/** The accepted ingests applied in order to the participants as the flush knows them: what it writes, and each caller's answer. */
function settle(decided: Decided, { at, month, cutoff, participants }: { at: string; month: string; cutoff: string; participants: Map<string, ParticipantState> }) {
  const flush: Flush = {
    at,
    month,
    participants,
    enrolments: [],
    variantParticipants: new Map(),
    conversions: new Map(),
    eventCounts: new Map(),
    quota: decided.quota,
    keys: [],
    keyCutoff: cutoff,
  };
  const accepted = new Map(decided.admitted.map((unit) => [unit.job, apply(flush, unit)]));
  flush.keys = decided.keyed.toStore(accepted);
  return { flush, accepted };
}

function outcomesOf(jobs: IngestJob[], { refused, keyed }: Decided, accepted: Map<IngestJob, IngestOutcome>): Flushed['outcomes'] {
  return jobs.map((job) => ({ job, outcome: refused.get(job) ?? accepted.get(job) ?? keyed.replayed(job, accepted) }));
}

/** Each team's assumed config version, the ingests it accepts and the least quota of any of them. */
function assumedTeams(teams: number[], assumption: Assumption, { admitted, quota }: Decided): AssumedChecks['teams'] {
  return teams.map((id) => {
    const limits = admitted.filter((unit) => unit.job.team.id === id && unit.job.team.ingest_limit !== null).map((unit) => unit.job.team.ingest_limit!);
    return { id, version: assumption.versions.get(id)!, accepted: quota.get(id) ?? 0, limit: limits.length === 0 ? null : Math.min(...limits) };
  });
}

/** The participants a flush that read none creates: every one it names. */
function namedIn(flush: Flush): NamedParticipant[] {
  return [...flush.participants.values()].map((state) => ({ team: state.row.team_id, key: state.row.key }));
}

/** The event, experiment and variant an ingest names, from its team's context (404 if any is unknown). */
async function resolve(db: Db, job: IngestJob, context: IngestContext): Promise<Resolved> {
  const { team, input } = job;
  const event = input.event === undefined ? undefined : await eventOf(db, team, context, input.event);
  const target = input.experiment === undefined ? undefined : await experimentOf(db, team, context, input.experiment);
  const chosen = target && input.variant !== undefined ? requireVariant(await variantsIn(db, team, context, target), target, input.variant) : undefined;
  return { job, given: givenParticipant(input), event, target, experiments: target ? [target] : context.running, running: context.running, variants: context.variants, chosen, value: carriedValue(input, event) };
}

/** An ingest's `value` (micro-units): required with a value event, refused with any other (409). */
function carriedValue(input: IngestRequest, event: EventRow | undefined): bigint | undefined {
  if (!event) return undefined;
  if (event.type === 'value' && input.value === undefined) throw new Conflict(`Event '${event.key}' is a value event: send \`value\` with it.`);
  if (event.type !== 'value' && input.value !== undefined) throw new Conflict(`Event '${event.key}' is a ${event.type} event: it carries no \`value\` (only value events do).`);
  return input.value === undefined ? undefined : toMicros(input.value)!;
}

/**
 * Whether a resolved ingest is refused, as the single ingest decides it against the quota use the
 * ingests before it in the flush have left: 409 for a named experiment that is not running or a
 * chosen variant with a 0 % share (402 first if the quota is used up), 402 when the quota is used
 * up; else it counts against the quota.
 */
function admission(used: Map<number, number>, unit: Resolved, at: string): HttpError | undefined {
  const team = unit.job.team;
  const quotaLeft = team.ingest_limit === null || used.get(team.id)! < team.ingest_limit;
  if (!quotaLeft) return new QuotaExceeded(`Team ${team.id} has used its ${team.ingest_limit} ingests of ${quotaMonth(at)} (UTC).`);
  if (unit.target && unit.target.status !== 'running') return new Conflict(`Experiment '${unit.target.key}' is ${unit.target.status}; only a running experiment enrols.`);
  if (unit.chosen && unit.chosen.share === 0) return new Conflict(`Variant '${unit.chosen.key}' of experiment '${unit.target!.key}' has 0 % of the traffic; no participant may enter it (body.variant).`);
  used.set(team.id, used.get(team.id)! + 1);
  return undefined;
}

/** The participant an ingest names: a key alone, or a key with notes and attributes. */
const givenParticipant = (input: IngestRequest): ParticipantInput => (typeof input.participant === 'string' ? { key: input.participant } : input.participant);

export const participantKey = (teamId: number, key: string) => `${teamId}\u0000${key}`;

/**
 * The stored participants of the accepted ingests as the flush knows them, with their
 * enrolments, exclusions and conversions: those it read when it opened, and those of accepted
 * ingests it did not expect, read now.
 */
async function readParticipants(db: Db, statements: FlushStatements, admitted: Resolved[], expected: NamedParticipant[], stored: StoredParticipants): Promise<Map<string, ParticipantState>> {
  const lookedUp = new Set(expected.map((named) => participantKey(named.team, named.key)));
  const unread = new Map<string, NamedParticipant>();
  for (const unit of admitted) {
    const key = participantKey(unit.job.team.id, unit.given.key);
    if (!lookedUp.has(key)) unread.set(key, { team: unit.job.team.id, key: unit.given.key });
  }
  const states = statesOf(stored);
  if (unread.size > 0) for (const [key, state] of statesOf(await statements.participants(db, [...unread.values()]))) states.set(key, state);
  return states;
}

function statesOf({ rows, histories }: StoredParticipants): Map<string, ParticipantState> {
  const states = new Map<string, ParticipantState>();
  const byId = new Map<number, ParticipantState>();
  for (const row of rows) {
    const state: ParticipantState = { row, isNew: false, changed: false, enrolments: [], excluded: new Set(), conversions: new Map() };
    states.set(participantKey(row.team_id, row.key), state);
    byId.set(row.id, state);
  }
  for (const { participant_id, ...enrolment } of histories.enrolments) byId.get(participant_id)!.enrolments.push(enrolment);
  for (const row of histories.exclusions) byId.get(row.participant_id)!.excluded.add(row.experiment_id);
  for (const row of histories.conversions) byId.get(row.participant_id)!.conversions.set(`${row.experiment_id}:${row.event_id}`, { count: Number(row.count), value: exact(row.value) });
  return states;
}

/**
 * An accepted ingest applied as the single ingest applies it, against the state the ingests
 * before it in the flush have left: the participant created or updated, enrolled (sticky,
 * exclusions kept) and its event counted. Answers what its caller is told.
 */
function apply(flush: Flush, unit: Resolved): IngestOutcome {
  const { at } = flush;
  const team = unit.job.team;
  const state = participantOf(flush.participants, team.id, unit.given, at);
  const enrolled = new Set(state.enrolments.map((enrolment) => enrolment.experiment_id));
  const candidate = candidateOf(state.row);
  // `enrol: false` enrols nowhere: its event counts only where the participant is enrolled already.
  for (const experiment of unit.job.input.enrol === false ? [] : unit.experiments) {
    if (experiment.status !== 'running' || enrolled.has(experiment.id) || state.excluded.has(experiment.id)) continue;
    if (holdsGroupOf(state, unit.running, experiment)) continue;
    const targeting = targetingOf(experiment);
    // A chosen variant is honoured only for a participant who qualifies.
    const variant = unit.chosen ? (admits(targeting, candidate) ? unit.chosen : null) : placeParticipant(targeting, candidate, sharesOf(unit.variants.get(experiment.id) ?? []));
    if (!variant) continue;
    state.enrolments.push({ id: 0, experiment_id: experiment.id, variant_id: variant.id, experiment_key: experiment.key, status: 'running', variant_key: variant.key, enrolled_at: at });
    flush.enrolments.push({ state, teamId: team.id, experimentId: experiment.id, variantId: variant.id });
    const counter = flush.variantParticipants.get(variant.id) ?? { teamId: team.id, added: 0 };
    counter.added++;
    flush.variantParticipants.set(variant.id, counter);
  }
  const assignments = state.enrolments.filter((enrolment) => enrolment.status === 'running');
  if (unit.event) {
    const event = unit.event;
    const value = unit.value ?? 0n;
    for (const placement of assignments.filter((enrolment) => !unit.target || enrolment.experiment_id === unit.target.id)) {
      const conversion = `${placement.experiment_id}:${event.id}`;
      const before = state.conversions.get(conversion) ?? { count: 0, value: 0n };
      const after = { count: before.count + 1, value: before.value + value };
      state.conversions.set(conversion, after);
      const conversionKey = `${participantKey(team.id, state.row.key)}\u0000${conversion}`;
      const row = flush.conversions.get(conversionKey) ?? { state, teamId: team.id, experimentId: placement.experiment_id, eventId: event.id, added: 0, value: 0n, stored: before.count > 0 };
      row.added++;
      row.value += value;
      flush.conversions.set(conversionKey, row);
      const countsKey = `${placement.variant_id}:${event.id}`;
      const counts = flush.eventCounts.get(countsKey) ?? { teamId: team.id, variantId: placement.variant_id, eventId: event.id, conversions: 0, unique: 0, sumY: 0n, sumY2: 0n };
      counts.conversions++;
      if (before.count === 0) counts.unique++;
      const change = sumChange(metricValue(event, before), metricValue(event, after));
      counts.sumY += change.y;
      counts.sumY2 += change.y2;
      flush.eventCounts.set(countsKey, counts);
    }
  }
  return { participant: toParticipant(state.row), assignments: assignments.map(toEnrolment) };
}

// A config version's variants place many participants: each list's traffic is made once (a copy per placement was 4 % of a batch's CPU).
const placements = new WeakMap<ResolvedVariant[], Array<ResolvedVariant & { traffic: number }>>();

/** An experiment's variants with their resolved shares as the traffic a placement reads. */
function sharesOf(variants: ResolvedVariant[]): Array<ResolvedVariant & { traffic: number }> {
  let shares = placements.get(variants);
  if (!shares) placements.set(variants, (shares = variants.map((variant) => ({ ...variant, traffic: variant.share }))));
  return shares;
}

/** The participant as conditions see it: its attributes as stored after this ingest's change, parsed only if a condition asks. */
function candidateOf(row: ParticipantRow): Candidate {
  let attributes: ConditionAttributes | undefined;
  return {
    key: row.key,
    get attributes() {
      return (attributes ??= JSON.parse(row.attributes) as ConditionAttributes);
    },
  };
}

/** Whether the participant is enrolled in another running experiment of the experiment's exclusion group. */
function holdsGroupOf(state: ParticipantState, running: ExperimentRow[], experiment: ExperimentRow): boolean {
  if (experiment.group_key === null) return false;
  return state.enrolments.some((enrolment) => {
    if (enrolment.experiment_id === experiment.id || enrolment.status !== 'running') return false;
    return running.find((other) => other.id === enrolment.experiment_id)?.group_key === experiment.group_key;
  });
}

/** The participant's state in the flush: as read, or created by this ingest; given notes and attributes applied. */
function participantOf(participants: Map<string, ParticipantState>, teamId: number, given: ParticipantInput, at: string): ParticipantState {
  const key = participantKey(teamId, given.key);
  let state = participants.get(key);
  if (!state) {
    const row: ParticipantRow = { id: 0, team_id: teamId, key: given.key, notes: given.notes ?? null, attributes: JSON.stringify(given.attributes ?? {}), created_at: at, updated_at: at };
    state = { row, isNew: true, changed: false, enrolments: [], excluded: new Set(), conversions: new Map() };
    participants.set(key, state);
    return state;
  }
  if (given.notes !== undefined || given.attributes !== undefined) {
    state.row = {
      ...state.row,
      ...(given.notes !== undefined && { notes: given.notes }),
      ...(given.attributes !== undefined && { attributes: JSON.stringify(given.attributes) }),
      updated_at: at,
    };
    state.changed = !state.isNew;
  }
  return state;
}
