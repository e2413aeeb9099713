import { CompiledQuery, sql } from 'kysely';
import type { components } from '../../generated/api';
import { assignVariant } from '../domain/assignment';
import type { EnrolmentRow } from '../enrolments/store';
import type { EventRow } from '../events/store';
import type { ExperimentRow } from '../experiments/store';
import { Conflict, HttpError, QuotaExceeded } from '../http/errors';
import type { ParticipantInput, ParticipantRow } from '../participants/store';
import type { Db } from '../storage/database';
import { teamLock } from '../storage/team-lock';
import { iso, now, utcDay } from '../storage/values';
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

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/**
 * PostgreSQL: a flush of concurrent ingests in a number of round trips that does not grow with
 * their number. Under the locks of their teams (so no other writer of these teams' rows runs
 * meanwhile, in any process), it reads in one query per table what every ingest needs — the
 * participants by key, their enrolments, exclusions and conversions, the month's quota use —
 * decides each ingest in order exactly as the single ingest would (its own 404, 409 or 402
 * storing nothing of it), then writes what the accepted ones change, one statement per table,
 * and commits once: each caller is answered after the commit.
 */
async function flushIngests(db: Db, jobs: IngestJob[]): Promise<void> {
  const decided: Array<{ job: IngestJob; outcome: IngestedUnit | HttpError }> = [];
  try {
    await db.connection().execute(async (connection) => {
      await connection.executeQuery(BEGIN);
      try {
        for (const teamId of [...new Set(jobs.map((job) => job.team.id))].sort((a, b) => a - b)) await connection.executeQuery(teamLock(teamId));
        decided.push(...(await ingestAll(connection, jobs)));
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
  key: string;
  given: ParticipantInput;
  event?: EventRow;
  target?: ExperimentRow;
  experiments: ExperimentRow[];
  variants: Map<number, ResolvedVariant[]>;
  chosen?: ResolvedVariant;
}

/** A participant as the flush knows it: stored already (`id`), or to be inserted by it. */
interface ParticipantState {
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
interface Flush {
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

async function ingestAll(db: Db, jobs: IngestJob[]): Promise<Array<{ job: IngestJob; outcome: IngestedUnit | HttpError }>> {
  const at = now();
  const month = quotaMonth(at);
  const read = await readFlush(db, jobs, month);
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
    participants: await withHistories(db, read.participants),
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
  if (flush.quota.size > 0) await write(db, flush);
  return outcomes;
}

/** The event, experiment and variant an ingest names, from its team's context (404 if any is unknown). */
async function resolve(db: Db, job: IngestJob, context: IngestContext): Promise<Resolved> {
  const { team, input } = job;
  const event = input.event === undefined ? undefined : await eventOf(db, team, context, input.event);
  const target = input.experiment === undefined ? undefined : await experimentOf(db, team, context, input.experiment);
  const variants = target && !context.variants.has(target.id) ? await variantsOfMany(db, team.id, [target.id]) : context.variants;
  const chosen = target && input.variant !== undefined ? requireVariant(variants.get(target.id) ?? [], target, input.variant) : undefined;
  const given: ParticipantInput = typeof input.participant === 'string' ? { key: input.participant } : input.participant;
  return { job, key: given.key, given, event, target, experiments: target ? [target] : context.running, variants, chosen };
}

const participantKey = (teamId: number, key: string) => `${teamId}\u0000${key}`;

/** What a flush reads first, under its teams' locks. */
interface FlushRead {
  /** team id → its config version. */
  versions: Map<number, number>;
  /** team id → the month's accepted ingests so far. */
  used: Map<number, number>;
  /** The stored participants the ingests name. */
  participants: ParticipantRow[];
}

type FlushReadRow = { flush_team: number; config_version: number; used: number } & ({ [K in keyof ParticipantRow]: null } | ParticipantRow);

/** In one query: each team's config version and quota use this month, and every stored participant the ingests name. */
async function readFlush(db: Db, jobs: IngestJob[], month: string): Promise<FlushRead> {
  const teams = [...new Set(jobs.map((job) => job.team.id))];
  const named = jobs.map((job) => ({ team: job.team.id, key: typeof job.input.participant === 'string' ? job.input.participant : job.input.participant.key }));
  const { rows } = await sql<FlushReadRow>`
    select t.id as flush_team, t.config_version, coalesce(u.count, 0) as used, p.*
    from teams t
    left join ingest_usage u on u.team_id = t.id and u.month = ${month}
    left join (participants p join (select distinct * from unnest(${named.map((n) => n.team)}::bigint[], ${named.map((n) => n.key)}::text[])) as k(team_id, key)
      on p.team_id = k.team_id and p.key = k.key) on p.team_id = t.id
    where t.id = any(${teams}::bigint[])`.execute(db);
  const read: FlushRead = { versions: new Map(), used: new Map(), participants: [] };
  for (const { flush_team, config_version, used, ...participant } of rows) {
    read.versions.set(flush_team, config_version);
    read.used.set(flush_team, Number(used));
    if (participant.id !== null) read.participants.push(participant as ParticipantRow);
  }
  const gone = teams.find((team) => !read.versions.has(team));
  if (gone !== undefined) throw new Error(`No team ${gone}.`);
  return read;
}

/** The stored participants as the flush knows them, with their enrolments, exclusions and conversions (three queries, when there are any). */
async function withHistories(db: Db, rows: ParticipantRow[]): Promise<Map<string, ParticipantState>> {
  const states = new Map<string, ParticipantState>();
  for (const row of rows) {
    states.set(participantKey(row.team_id, row.key), { row, isNew: false, changed: false, enrolments: [], excluded: new Set(), conversions: new Map() });
  }
  const ids = rows.map((row) => row.id);
  if (ids.length === 0) return states;
  const byId = new Map([...states.values()].map((state) => [state.row.id, state]));
  const [enrolments, exclusions, conversions] = await Promise.all([
    sql<EnrolmentRow & { participant_id: number }>`
      select e.participant_id, e.id, e.experiment_id, e.variant_id, x.key as experiment_key, x.status, v.key as variant_key, e.enrolled_at
      from enrolments e join experiments x on x.id = e.experiment_id join variants v on v.id = e.variant_id
      where e.participant_id = any(${ids}::bigint[]) order by e.id`.execute(db),
    sql<{ participant_id: number; experiment_id: number }>`select participant_id, experiment_id from exclusions where participant_id = any(${ids}::bigint[])`.execute(db),
    sql<{ participant_id: number; experiment_id: number; event_id: number; count: number }>`
      select participant_id, experiment_id, event_id, count from conversions where participant_id = any(${ids}::bigint[])`.execute(db),
  ]);
  for (const { participant_id, ...enrolment } of enrolments.rows) byId.get(participant_id)!.enrolments.push(enrolment);
  for (const row of exclusions.rows) byId.get(row.participant_id)!.excluded.add(row.experiment_id);
  for (const row of conversions.rows) byId.get(row.participant_id)!.conversions.set(`${row.experiment_id}:${row.event_id}`, Number(row.count));
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
 * The flush's writes in one statement of data-modifying CTEs: new participants (their ids, for
 * their enrolments and conversions, from its RETURNING), changed ones, enrolments, counters and
 * their daily roll-up, conversions and quota. Answers the participants it created or changed.
 */
async function write(db: Db, flush: Flush): Promise<void> {
  const { at, month } = flush;
  const day = utcDay(at);
  const states = [...flush.participants.values()];
  const created = states.filter((state) => state.isNew);
  const changed = states.filter((state) => state.changed);
  const enrolments = flush.enrolments;
  const variantIds = [...flush.variantParticipants.keys()];
  const conversions = [...flush.conversions.values()];
  const counts = [...flush.eventCounts.values()];
  const quota = [...flush.quota.entries()];
  // A participant this flush creates has id 0 until the insert answers it: rows naming it find it there by team and key.
  const { rows } = await sql<ParticipantRow & { is_new: boolean }>`
    with created as (
      insert into participants (team_id, key, notes, attributes, created_at, updated_at)
      select * from unnest(${created.map((s) => s.row.team_id)}::bigint[], ${created.map((s) => s.row.key)}::text[], ${created.map((s) => s.row.notes)}::text[],
        ${created.map((s) => s.row.attributes)}::text[], ${created.map((s) => iso(s.row.created_at))}::timestamptz[], ${created.map((s) => iso(s.row.updated_at))}::timestamptz[])
      returning *
    ), changed as (
      update participants p set notes = d.notes, attributes = d.attributes, updated_at = d.updated_at
      from unnest(${changed.map((s) => s.row.id)}::bigint[], ${changed.map((s) => s.row.notes)}::text[], ${changed.map((s) => s.row.attributes)}::text[],
        ${changed.map((s) => iso(s.row.updated_at))}::timestamptz[]) as d(id, notes, attributes, updated_at)
      where p.id = d.id
      returning p.*
    ), enrolled as (
      insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at)
      select e.team_id, coalesce(c.id, e.participant_id), e.experiment_id, e.variant_id, ${at}::timestamptz
      from unnest(${enrolments.map((e) => e.teamId)}::bigint[], ${enrolments.map((e) => e.state.row.id)}::bigint[], ${enrolments.map((e) => e.state.row.key)}::text[],
        ${enrolments.map((e) => e.experimentId)}::bigint[], ${enrolments.map((e) => e.variantId)}::bigint[]) with ordinality as e(team_id, participant_id, key, experiment_id, variant_id, n)
      left join created c on e.participant_id = 0 and c.team_id = e.team_id and c.key = e.key
      order by e.n -- ids in the order the ingests enrolled: a participant's assignments are answered in it
      returning 1
    ), counted as (
      update variants v set participants = v.participants + d.added
      from unnest(${variantIds}::bigint[], ${variantIds.map((id) => flush.variantParticipants.get(id)!.teamId)}::bigint[], ${variantIds.map((id) => flush.variantParticipants.get(id)!.added)}::bigint[]) as d(id, team_id, added)
      where v.id = d.id and v.team_id = d.team_id
      returning 1
    ), counted_daily as (
      insert into daily_variant_counts (team_id, variant_id, day, participants)
      select d.team_id, d.id, ${day}, d.added
      from unnest(${variantIds}::bigint[], ${variantIds.map((id) => flush.variantParticipants.get(id)!.teamId)}::bigint[], ${variantIds.map((id) => flush.variantParticipants.get(id)!.added)}::bigint[]) as d(id, team_id, added)
      on conflict (team_id, variant_id, day) do update set participants = daily_variant_counts.participants + excluded.participants
      returning 1
    ), converted as (
      insert into conversions (team_id, participant_id, experiment_id, event_id, count)
      select v.team_id, coalesce(c.id, v.participant_id), v.experiment_id, v.event_id, v.added
      from unnest(${conversions.map((c) => c.teamId)}::bigint[], ${conversions.map((c) => c.state.row.id)}::bigint[], ${conversions.map((c) => c.state.row.key)}::text[],
        ${conversions.map((c) => c.experimentId)}::bigint[], ${conversions.map((c) => c.eventId)}::bigint[], ${conversions.map((c) => c.added)}::bigint[])
        as v(team_id, participant_id, key, experiment_id, event_id, added)
      left join created c on v.participant_id = 0 and c.team_id = v.team_id and c.key = v.key
      on conflict (team_id, participant_id, experiment_id, event_id) do update set count = conversions.count + excluded.count
      returning 1
    ), tallied as (
      insert into variant_event_counts (team_id, variant_id, event_id, conversions, unique_conversions)
      select * from unnest(${counts.map((c) => c.teamId)}::bigint[], ${counts.map((c) => c.variantId)}::bigint[], ${counts.map((c) => c.eventId)}::bigint[],
        ${counts.map((c) => c.conversions)}::bigint[], ${counts.map((c) => c.unique)}::bigint[])
      on conflict (team_id, variant_id, event_id) do update
        set conversions = variant_event_counts.conversions + excluded.conversions, unique_conversions = variant_event_counts.unique_conversions + excluded.unique_conversions
      returning 1
    ), tallied_daily as (
      insert into daily_variant_event_counts (team_id, variant_id, event_id, day, conversions, unique_conversions)
      select c.team_id, c.variant_id, c.event_id, ${day}, c.conversions, c.unique_conversions
      from unnest(${counts.map((c) => c.teamId)}::bigint[], ${counts.map((c) => c.variantId)}::bigint[], ${counts.map((c) => c.eventId)}::bigint[],
        ${counts.map((c) => c.conversions)}::bigint[], ${counts.map((c) => c.unique)}::bigint[]) as c(team_id, variant_id, event_id, conversions, unique_conversions)
      on conflict (team_id, variant_id, event_id, day) do update
        set conversions = daily_variant_event_counts.conversions + excluded.conversions,
          unique_conversions = daily_variant_event_counts.unique_conversions + excluded.unique_conversions
      returning 1
    ), used as (
      insert into ingest_usage (team_id, month, count)
      select team_id, ${month}, count from unnest(${quota.map(([team]) => team)}::bigint[], ${quota.map(([, count]) => count)}::bigint[]) as q(team_id, count)
      on conflict (team_id, month) do update set count = ingest_usage.count + excluded.count
      returning 1
    )
    select true as is_new, created.* from created
    union all
    select false, changed.* from changed`.execute(db);
  const createdRows = new Map(rows.filter((row) => row.is_new).map(({ is_new: _, ...row }) => [participantKey(row.team_id, row.key), row]));
  const changedRows = new Map(rows.filter((row) => !row.is_new).map(({ is_new: _, ...row }) => [row.id, row]));
  for (const state of created) state.row = createdRows.get(participantKey(state.row.team_id, state.row.key))!;
  for (const state of changed) state.row = changedRows.get(state.row.id)!;
}

/**
 * Collects the ingests that arrive while a flush runs and flushes them together next, like the
 * group commit (storage/group-commit.ts) does for other units: one transaction — one commit — per
 * flush, at most MAX_FLUSH ingests each.
 */
export function ingestFlusher(db: Db): (job: Omit<IngestJob, 'resolve' | 'reject'>) => Promise<IngestedUnit> {
  let waiting: IngestJob[] = [];
  let running = false;
  async function drain(): Promise<void> {
    while (waiting.length > 0) {
      const jobs = waiting.slice(0, MAX_FLUSH);
      waiting = waiting.slice(jobs.length);
      await flushIngests(db, jobs);
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
