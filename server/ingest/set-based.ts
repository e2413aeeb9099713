import { CompiledQuery } from 'kysely';
import type { components } from '../../generated/api';
import { assignVariant } from '../domain/assignment';
import type { EnrolmentRow } from '../enrolments/store';
import type { EventRow } from '../events/store';
import type { ExperimentRow } from '../experiments/store';
import { Conflict, HttpError, QuotaExceeded } from '../http/errors';
import type { ParticipantInput, ParticipantRow } from '../participants/store';
import type { Db } from '../storage/database';
import { now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { requireVariant } from '../variants/service';
import { variantsOfMany, type ResolvedVariant } from '../variants/store';
import { contextAt, eventOf, experimentOf, type IngestContext, type IngestContexts } from './context';
import { quotaMonth } from './quota';

type IngestRequest = components['schemas']['IngestRequest'];

/** One ingest waiting for its flush, and what its caller is told once the flush has committed. */
interface IngestJob {
  team: TeamRow;
  contexts: IngestContexts;
  input: IngestRequest;
  resolve: (outcome: IngestedUnit) => void;
  reject: (error: unknown) => void;
}

/** What the single ingest answers: the participant as stored and its assignments in running experiments. */
interface IngestedUnit {
  participant: ParticipantRow;
  assignments: EnrolmentRow[];
}

/** What a flush reads first, under its teams' locks. */
export interface FlushRead {
  /** team id → its config version. */
  versions: Map<number, number>;
  /** team id → the month's accepted ingests so far. */
  used: Map<number, number>;
  /** The stored participants the ingests name. */
  participants: ParticipantRow[];
}

/** The enrolments, exclusions and conversions of stored participants. */
export interface Histories {
  enrolments: Array<EnrolmentRow & { participant_id: number }>;
  exclusions: Array<{ participant_id: number; experiment_id: number }>;
  conversions: Array<{ participant_id: number; experiment_id: number; event_id: number; count: number }>;
}

/** A participant named by an ingest of a flush. */
export interface NamedParticipant {
  team: number;
  key: string;
}

/** What differs between engines: the SQL of a flush, each a constant number of statements whatever the number of ingests. */
export interface FlushStatements {
  /** Opens the flush's transaction, taking every write lock a writer of these teams takes first. */
  begin(connection: Db, teams: number[]): Promise<void>;
  /** Each team's config version and quota use this month, and every stored participant named. */
  read(connection: Db, teams: number[], named: NamedParticipant[], month: string): Promise<FlushRead>;
  histories(connection: Db, participants: ParticipantRow[]): Promise<Histories>;
  /** Writes what the flush decided; gives the participants it created or changed their stored rows. */
  write(connection: Db, flush: Flush): Promise<void>;
}

const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/**
 * A flush of concurrent ingests in a number of statements that does not grow with their number.
 * Under the write locks of their teams (so no other writer of these teams' rows runs meanwhile,
 * in any process), it reads what every ingest needs in a few queries — the participants by key,
 * their enrolments, exclusions and conversions, the month's quota use — decides each ingest in
 * order exactly as a single ingest alone would be decided (its own 404, 409 or 402 storing
 * nothing of it), then writes what the accepted ones change, a statement per table at most, and
 * commits once: each caller is answered after the commit.
 */
async function flushIngests(db: Db, statements: FlushStatements, jobs: IngestJob[]): Promise<void> {
  const decided: Array<{ job: IngestJob; outcome: IngestedUnit | HttpError }> = [];
  try {
    await db.connection().execute(async (connection) => {
      await statements.begin(connection, [...new Set(jobs.map((job) => job.team.id))].sort((a, b) => a - b));
      try {
        decided.push(...(await ingestAll(connection, statements, jobs)));
        await connection.executeQuery(COMMIT);
      } catch (error) {
        await connection.executeQuery(ROLLBACK).catch(() => {});
        throw error;
      }
    });
  } catch (error) {
    for (const job of jobs) job.reject(error);
    return;
  }
  for (const { job, outcome } of decided) {
    if (outcome instanceof HttpError) job.reject(outcome);
    else job.resolve(outcome);
  }
}

/** What one accepted ingest resolved to before anything is read of its participant. */
interface Resolved {
  job: IngestJob;
  given: ParticipantInput;
  event?: EventRow;
  target?: ExperimentRow;
  experiments: ExperimentRow[];
  variants: Map<number, ResolvedVariant[]>;
  chosen?: ResolvedVariant;
}

/** A participant as the flush knows it: stored already (`id`), or to be inserted by it. */
export interface ParticipantState {
  row: ParticipantRow;
  isNew: boolean;
  /** notes / attributes to write to an existing row. */
  changed: boolean;
  enrolments: EnrolmentRow[];
  excluded: Set<number>;
  /** `experimentId:eventId` → conversions so far. */
  conversions: Map<string, number>;
}

/** A flush: its clock, what it has read, and what the ingests decided so far will write. */
export interface Flush {
  at: string;
  month: string;
  participants: Map<string, ParticipantState>;
  /** The month's accepted ingests per team, this flush's included. */
  used: Map<number, number>;
  enrolments: Array<{ state: ParticipantState; teamId: number; experimentId: number; variantId: number }>;
  /** variant id → participants it gains. */
  variantParticipants: Map<number, { teamId: number; added: number }>;
  /** participant (team, key) and `experimentId:eventId` → conversions it gains. */
  conversions: Map<string, { state: ParticipantState; teamId: number; experimentId: number; eventId: number; added: number }>;
  /** `variantId:eventId` → conversions and unique conversions it gains. */
  eventCounts: Map<string, { teamId: number; variantId: number; eventId: number; conversions: number; unique: number }>;
  /** team id → ingests it accepts. */
  quota: Map<number, number>;
}

async function ingestAll(db: Db, statements: FlushStatements, jobs: IngestJob[]): Promise<Array<{ job: IngestJob; outcome: IngestedUnit | HttpError }>> {
  const at = now();
  const month = quotaMonth(at);
  const teams = [...new Set(jobs.map((job) => job.team.id))];
  const named = jobs.map((job) => ({ team: job.team.id, key: givenParticipant(job.input).key }));
  const read = await statements.read(db, teams, named, month);
  const gone = teams.find((team) => !read.versions.has(team));
  if (gone !== undefined) throw new Error(`No team ${gone}.`);
  const resolved = new Map<IngestJob, Resolved | HttpError>();
  // Each team's context once per flush, at the config version read under the team's lock: it holds for the whole flush.
  const contexts = new Map<number, Promise<IngestContext>>();
  const contextFor = (job: IngestJob) => {
    let context = contexts.get(job.team.id);
    if (!context) contexts.set(job.team.id, (context = contextAt(db, job.contexts, job.team, read.versions.get(job.team.id)!)));
    return context;
  };
  for (const job of jobs) resolved.set(job, await resolve(db, job, await contextFor(job)).catch((error: unknown) => (error instanceof HttpError ? error : Promise.reject(error))));
  const flush: Flush = {
    at,
    month,
    participants: await withHistories(db, statements, read.participants),
    used: read.used,
    enrolments: [],
    variantParticipants: new Map(),
    conversions: new Map(),
    eventCounts: new Map(),
    quota: new Map(),
  };
  const outcomes = jobs.map((job) => {
    const unit = resolved.get(job)!;
    return { job, outcome: unit instanceof HttpError ? unit : decide(flush, unit) };
  });
  if (flush.quota.size > 0) await statements.write(db, flush);
  return outcomes;
}

/** The event, experiment and variant an ingest names, from its team's context (404 if any is unknown). */
async function resolve(db: Db, job: IngestJob, context: IngestContext): Promise<Resolved> {
  const { team, input } = job;
  const event = input.event === undefined ? undefined : await eventOf(db, team, context, input.event);
  const target = input.experiment === undefined ? undefined : await experimentOf(db, team, context, input.experiment);
  const variants = target && !context.variants.has(target.id) ? await variantsOfMany(db, team.id, [target.id]) : context.variants;
  const chosen = target && input.variant !== undefined ? requireVariant(variants.get(target.id) ?? [], target, input.variant) : undefined;
  return { job, given: givenParticipant(input), event, target, experiments: target ? [target] : context.running, variants, chosen };
}

/** The participant an ingest names: a key alone, or a key with notes and attributes. */
const givenParticipant = (input: IngestRequest): ParticipantInput => (typeof input.participant === 'string' ? { key: input.participant } : input.participant);

export const participantKey = (teamId: number, key: string) => `${teamId}\u0000${key}`;

/** The stored participants as the flush knows them, with their enrolments, exclusions and conversions. */
async function withHistories(db: Db, statements: FlushStatements, rows: ParticipantRow[]): Promise<Map<string, ParticipantState>> {
  const states = new Map<string, ParticipantState>();
  for (const row of rows) {
    states.set(participantKey(row.team_id, row.key), { row, isNew: false, changed: false, enrolments: [], excluded: new Set(), conversions: new Map() });
  }
  if (rows.length === 0) return states;
  const byId = new Map([...states.values()].map((state) => [state.row.id, state]));
  const { enrolments, exclusions, conversions } = await statements.histories(db, rows);
  for (const { participant_id, ...enrolment } of enrolments) byId.get(participant_id)!.enrolments.push(enrolment);
  for (const row of exclusions) byId.get(row.participant_id)!.excluded.add(row.experiment_id);
  for (const row of conversions) byId.get(row.participant_id)!.conversions.set(`${row.experiment_id}:${row.event_id}`, Number(row.count));
  return states;
}

/**
 * One ingest decided as the single ingest decides it, against the state the ingests before it
 * in the flush have left: 409 for a named experiment that is not running (402 first if the quota
 * is used up), 402 when the quota is used up, else the participant created or updated, enrolled
 * (sticky, exclusions kept) and its event counted.
 */
function decide(flush: Flush, unit: Resolved): IngestedUnit | HttpError {
  const { at, used } = flush;
  const team = unit.job.team;
  const quotaLeft = team.ingest_limit === null || used.get(team.id)! < team.ingest_limit;
  const quotaExceeded = () => new QuotaExceeded(`Team ${team.id} has used its ${team.ingest_limit} ingests of ${quotaMonth(at)} (UTC).`);
  if (unit.target && unit.target.status !== 'running') {
    if (!quotaLeft) return quotaExceeded();
    return new Conflict(`Experiment '${unit.target.key}' is ${unit.target.status}; only a running experiment enrols.`);
  }
  if (!quotaLeft) return quotaExceeded();
  used.set(team.id, used.get(team.id)! + 1);
  flush.quota.set(team.id, (flush.quota.get(team.id) ?? 0) + 1);

  const state = participantOf(flush.participants, team.id, unit.given, at);
  const enrolled = new Set(state.enrolments.map((enrolment) => enrolment.experiment_id));
  for (const experiment of unit.experiments) {
    if (experiment.status !== 'running' || enrolled.has(experiment.id) || state.excluded.has(experiment.id)) continue;
    const shares = (unit.variants.get(experiment.id) ?? []).map((variant) => ({ ...variant, traffic: variant.share }));
    const variant = unit.chosen ?? assignVariant(experiment.seed, state.row.key, shares);
    if (!variant) continue;
    state.enrolments.push({ id: 0, experiment_id: experiment.id, variant_id: variant.id, experiment_key: experiment.key, status: 'running', variant_key: variant.key, enrolled_at: at });
    flush.enrolments.push({ state, teamId: team.id, experimentId: experiment.id, variantId: variant.id });
    const counter = flush.variantParticipants.get(variant.id) ?? { teamId: team.id, added: 0 };
    counter.added++;
    flush.variantParticipants.set(variant.id, counter);
  }
  const assignments = state.enrolments.filter((enrolment) => enrolment.status === 'running');
  if (unit.event) {
    for (const placement of assignments.filter((enrolment) => !unit.target || enrolment.experiment_id === unit.target.id)) {
      const conversion = `${placement.experiment_id}:${unit.event.id}`;
      const before = state.conversions.get(conversion) ?? 0;
      state.conversions.set(conversion, before + 1);
      const conversionKey = `${participantKey(team.id, state.row.key)}\u0000${conversion}`;
      const row = flush.conversions.get(conversionKey) ?? { state, teamId: team.id, experimentId: placement.experiment_id, eventId: unit.event.id, added: 0 };
      row.added++;
      flush.conversions.set(conversionKey, row);
      const counts = flush.eventCounts.get(`${placement.variant_id}:${unit.event.id}`) ?? { teamId: team.id, variantId: placement.variant_id, eventId: unit.event.id, conversions: 0, unique: 0 };
      counts.conversions++;
      if (before === 0) counts.unique++;
      flush.eventCounts.set(`${placement.variant_id}:${unit.event.id}`, counts);
    }
  }
  return { participant: state.row, assignments: [...assignments] };
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

/**
 * Collects the ingests that arrive while a flush runs and flushes them together next, like the
 * group commit (storage/group-commit.ts) does for other units: one transaction — one commit — per
 * flush, at most MAX_FLUSH ingests each.
 */
export function ingestFlusher(db: Db, statements: FlushStatements): (job: Omit<IngestJob, 'resolve' | 'reject'>) => Promise<IngestedUnit> {
  let waiting: IngestJob[] = [];
  let running = false;
  async function drain(): Promise<void> {
    while (waiting.length > 0) {
      const jobs = waiting.slice(0, MAX_FLUSH);
      waiting = waiting.slice(jobs.length);
      await flushIngests(db, statements, jobs);
    }
    running = false;
  }
  return (job) =>
    new Promise<IngestedUnit>((resolve, reject) => {
      waiting.push({ ...job, resolve, reject });
      if (!running) {
        running = true;
        // Let the ingests that arrive in the same turn of the event loop join this flush.
        setImmediate(() => void drain());
      }
    });
}

const MAX_FLUSH = 500;
