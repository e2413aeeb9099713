import { CompiledQuery, sql } from 'kysely';
import { teamLock } from '../storage/team-lock';
import { iso, utcDay } from '../storage/values';
import { inOneRoundTrip } from '../storage/postgres-pipeline';
import { ASSUMPTION_CHANGED } from '../storage/sql-states';
import type { LedgerChange, ParticipantState } from './change';
import { countersOf, EVENT_COUNTERS, takesBack, type EventDelta } from './counters';
import { assumptionsHold } from './postgres-assumption';
import { participantsRead, storedParticipants } from './postgres-participants';
import { rolloutArmsWrite } from './postgres-rollouts';
import { keyId, type FlushRead, type Ledger, type NamedKey } from './port';
import { writeWithdrawals } from './withdrawals';

const BEGIN = CompiledQuery.raw('begin');
/**
 * A flush's reads look rows up by key, each written so that any plan of it probes an index, so a
 * plan made once serves every run. PostgreSQL's default planned them anew at every run (a plan
 * for the values at hand looks cheaper), which was about a quarter of the database's CPU for a
 * flush of a few ingests (bench/results/2026-11-25-postgres-plans-once.md); the write already ran on its generic plan.
 */
const GENERIC_PLANS = CompiledQuery.raw('set local plan_cache_mode = force_generic_plan');
const COMMIT = CompiledQuery.raw('commit');
// What a flush decided on is checked in a subtransaction: where it fails, the flush's locks stay
// held. Its writes are the transaction's own (released), as migration 016's checks recognise them.
const SAVEPOINT = CompiledQuery.raw('savepoint assumed');
const RELEASE = CompiledQuery.raw('release savepoint assumed');
const ROLLBACK_TO_SAVEPOINT = CompiledQuery.raw('rollback to savepoint assumed');

/**
 * PostgreSQL: a flush is two round trips (postgres-pipeline.ts). The first opens the transaction,
 * takes the teams' locks and reads — each statement sees what the ones before it locked, since
 * each takes its own snapshot — the teams (with the stored idempotency keys) and the expected
 * participants with their histories; the second writes and commits. One more, between them,
 * reads the participants of accepted ingests the flush did not expect. A flush that decided on
 * assumptions (assumed-flushes.ts, postgres-assumption.ts) is one round trip, and three when they fail. Arrays are bound as
 * parameters and `unnest`ed; the writes are one statement of data-modifying CTEs.
 */
export const postgresLedger: Ledger = {
  async open(connection, { teams, month, keys, cutoff, expected, afterAssumption }) {
    const opening = afterAssumption ? [ROLLBACK_TO_SAVEPOINT, RELEASE] : [BEGIN, GENERIC_PLANS, ...teams.map(teamLock)];
    const reading = [teamsRead(teams, month, keys, cutoff), ...(expected.length === 0 ? [] : [participantsRead(expected)])];
    const answers = await inOneRoundTrip(connection, [...opening, ...reading.map((query) => query.compile(connection))]);
    const [read, participants] = answers.slice(opening.length);
    return { read: flushRead(read!.rows as TeamsRow[]), participants: storedParticipants(participants) };
  },

  async participants(connection, named) {
    const { rows } = await participantsRead(named).execute(connection);
    return storedParticipants({ rows });
  },

  async commit(connection, change) {
    if (!change) {
      await connection.executeQuery(COMMIT);
      return;
    }
    await inOneRoundTrip(connection, [...writes(change).map((query) => query.compile(connection)), COMMIT]);
  },

  // The counters first, then the rows: a variant's counter is locked before its enrolments, as
  // an experiment's deletion locks its variants before the enrolments its cascade deletes.
  async write(connection, change) {
    await write(change).execute(connection);
    await writeWithdrawals(connection, change);
  },

  /**
   * One round trip: begin, the teams' locks, the check of what the flush assumed (in a
   * subtransaction), the write and the commit. A check that fails refuses its statement with
   * ASSUMPTION_CHANGED, which ends the message there: nothing is written, and the transaction
   * stays open under the locks, at the savepoint, for the reads.
   */
  async commitAssuming(connection, checks, change) {
    const opening = [BEGIN, GENERIC_PLANS, ...checks.teams.map((team) => teamLock(team.id)), SAVEPOINT];
    const writing = change ? writes(change).map((query) => query.compile(connection)) : [];
    try {
      const answers = await inOneRoundTrip(connection, [...opening, assumptionsHold(checks).compile(connection), RELEASE, ...writing, COMMIT]);
      return new Map((answers[opening.length]!.rows as Array<{ id: number; used: number }>).map((row) => [Number(row.id), Number(row.used)]));
    } catch (error) {
      if ((error as { code?: string }).code === ASSUMPTION_CHANGED) return undefined;
      throw error;
    }
  },

  opensWhileWriting: true,
  // PostgreSQL writes while the process goes on, and part of a flush's work does not grow with
  // its rows (its statements and their key checks, the counters, the commit): twice SQLite's
  // bound made batches of 100 from 10 connections 11–17 % faster; three times, no faster
  // (bench/results/2026-11-27-postgres-flush-rows.md).
  flushRows: 2000,
};

/** The flush's write, and the rollouts' after it (postgres-rollouts.ts). */
const writes = (change: LedgerChange) => [write(change), ...[rolloutArmsWrite(change)].filter((query) => query !== undefined)];

type TeamsRow = { id: number; config_version: number; used: number; key: string | null; outcome: string | null };

/**
 * Each team's config version and quota use; with keys to look up, the stored ones as rows of their
 * own (`key` not null). Each team's use is a probe of its (team_id, month) key.
 */
function teamsRead(teams: number[], month: string, keys: NamedKey[], cutoff: string) {
  return sql<TeamsRow>`
      select t.id, t.config_version, coalesce((select u.count from ingest_usage u where u.team_id = t.id and u.month = ${month}), 0) as used,
        null::text as key, null::text as outcome
      from unnest(${teams}::bigint[]) as n(id) cross join lateral (select * from teams t where t.id = n.id limit 1) t
      ${
        keys.length === 0
          ? sql``
          : sql`union all
      select k.team_id, null, null, k.key, k.outcome
      from unnest(${keys.map((k) => k.team)}::bigint[], ${keys.map((k) => k.key)}::text[]) as n(team_id, key)
      cross join lateral (select * from ingest_keys k where k.team_id = n.team_id and k.key = n.key and k.created_at > ${cutoff}::timestamptz limit 1) k`
      }`;
}

function flushRead(rows: TeamsRow[]): FlushRead {
  const read: FlushRead = { versions: new Map(), used: new Map(), keys: new Map() };
  for (const row of rows) {
    if (row.key !== null) read.keys.set(keyId(row.id, row.key), row.outcome!);
    else {
      read.versions.set(row.id, row.config_version);
      read.used.set(row.id, Number(row.used));
    }
  }
  return read;
}

/**
 * One statement of data-modifying CTEs: new participants (their ids, for their enrolments and
 * conversions, from its RETURNING), changed ones, enrolments, counters and their daily roll-up,
 * conversions, idempotency keys (only when some are stored) and quota, counted last.
 */
function write(change: LedgerChange) {
  const { at, month } = change;
  const day = utcDay(at);
  const states = [...change.participants.values()];
  const created = states.filter((state) => state.isNew);
  const changed = states.filter((state) => state.changed);
  const enrolments = change.enrolments;
  // Only a stored participant has a history before today, so a covariate always names a stored one.
  const covariates = enrolments.flatMap((e) => e.covariates.map((c) => ({ teamId: e.teamId, participantId: e.state.row.id, experimentId: e.experimentId, ...c })));
  const { variants, events: counts } = countersOf(change);
  // A conversion whose participant leaves the experiment goes with its enrolment (writeWithdrawals).
  const conversions = [...change.conversions.values()].filter((c) => c.after.count > 0);
  // The flush knows each participant's stored conversions: a new row is a plain insert (an upsert
  // probes its key first and logs a second record to confirm it), a stored one an upsert still.
  const added = conversions.filter((c) => c.before.count === 0);
  const restated = conversions.filter((c) => c.before.count > 0);
  const quota = [...change.quota.entries()];
  const activity = [...change.activity.values()];
  // A participant this flush creates has id 0 until the insert answers it: rows naming it give its
  // position among the created (1, 2 …; 0 for a stored one), the index of its id in `created`.
  const positions = new Map(created.map((state, i) => [state, i + 1]));
  const positionOf = (state: ParticipantState) => positions.get(state) ?? 0;
  const counted = sql`unnest(${variants.map((v) => v.variantId)}::bigint[], ${variants.map((v) => v.teamId)}::bigint[], ${variants.map((v) => v.participants)}::bigint[]) as d(id, team_id, added)`;
  const tallies = (counts: EventDelta[]) => sql`unnest(${counts.map((c) => c.teamId)}::bigint[], ${counts.map((c) => c.variantId)}::bigint[], ${counts.map((c) => c.eventId)}::bigint[], ${sql.join(
    EVENT_COUNTERS.map(({ column, exact }) => sql`${counts.map((c) => c.counters[column].toString())}::${sql.raw(exact ? 'numeric' : 'bigint')}[]`),
  )}) as c(team_id, variant_id, event_id, ${COLUMNS})`;
  const falling = counts.filter(takesBack);
  const rising = falling.length === 0 ? counts : counts.filter((delta) => !takesBack(delta));
  const gained = sql`${sql.raw(`c.${EVENT_COUNTERS.map((counter) => counter.column).join(', c.')}`)}`;
  return sql`
    with new_participants as (
      select * from unnest(${created.map((s) => s.row.team_id)}::bigint[], ${created.map((s) => s.row.key)}::text[], ${created.map((s) => s.row.notes)}::text[],
        ${created.map((s) => s.row.attributes)}::text[]) with ordinality as n(team_id, key, notes, attributes, position)
    ), inserted as (
      -- every participant a flush creates is created at its clock
      insert into participants (team_id, key, notes, attributes, created_at, updated_at)
      select team_id, key, notes, attributes, ${at}::timestamptz, ${at}::timestamptz from new_participants
      returning id, team_id, key
    ), created as (
      -- an array, not rows to join: a join's plan, made once for every flush, may loop over them per row
      select array_agg(i.id order by n.position) as ids from new_participants n join inserted i on i.team_id = n.team_id and i.key = n.key
    ), changed as (
      update participants p set notes = d.notes, attributes = d.attributes, updated_at = d.updated_at
      from unnest(${changed.map((s) => s.row.team_id)}::bigint[], ${changed.map((s) => s.row.id)}::bigint[], ${changed.map((s) => s.row.notes)}::text[],
        ${changed.map((s) => s.row.attributes)}::text[], ${changed.map((s) => iso(s.row.updated_at))}::timestamptz[]) as d(team_id, id, notes, attributes, updated_at)
      where p.team_id = d.team_id and p.id = d.id
    ), enrolled as (
      insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at)
      select e.team_id, coalesce((select ids from created)[e.created], e.participant_id), e.experiment_id, e.variant_id, ${at}::timestamptz
      from unnest(${enrolments.map((e) => e.teamId)}::bigint[], ${enrolments.map((e) => e.state.row.id)}::bigint[], ${enrolments.map((e) => positionOf(e.state))}::int[],
        ${enrolments.map((e) => e.experimentId)}::bigint[], ${enrolments.map((e) => e.variantId)}::bigint[]) with ordinality as e(team_id, participant_id, created, experiment_id, variant_id, n)
      order by e.n -- ids in the order the ingests enrolled: a participant's assignments are answered in it
    )${
      covariates.length === 0
        ? sql``
        : sql`, frozen as (
      insert into enrolment_covariates (team_id, participant_id, experiment_id, event_id, x)
      select * from unnest(${covariates.map((c) => c.teamId)}::bigint[], ${covariates.map((c) => c.participantId)}::bigint[], ${covariates.map((c) => c.experimentId)}::bigint[],
        ${covariates.map((c) => c.eventId)}::bigint[], ${covariates.map((c) => c.x.toString())}::numeric[])
    )`
    }, counted as (
      update variants v set participants = v.participants + d.added
      from ${counted}
      where v.id = d.id and v.team_id = d.team_id
    ), counted_daily as (
      insert into daily_variant_counts (team_id, variant_id, day, participants)
      select d.team_id, d.id, ${day}, d.added
      from ${counted}
      on conflict (team_id, variant_id, day) do update set participants = daily_variant_counts.participants + excluded.participants
    ), converted as (
      insert into conversions (team_id, participant_id, experiment_id, event_id, count, value)
      select v.team_id, coalesce((select ids from created)[v.created], v.participant_id), v.experiment_id, v.event_id, v.added, v.value
      from unnest(${added.map((c) => c.teamId)}::bigint[], ${added.map((c) => c.state.row.id)}::bigint[], ${added.map((c) => positionOf(c.state))}::int[],
        ${added.map((c) => c.experimentId)}::bigint[], ${added.map((c) => c.eventId)}::bigint[], ${added.map((c) => c.after.count)}::bigint[],
        ${added.map((c) => c.after.value.toString())}::numeric[])
        as v(team_id, participant_id, created, experiment_id, event_id, added, value)
    ), reconverted as (
      insert into conversions (team_id, participant_id, experiment_id, event_id, count, value)
      select * from unnest(${restated.map((c) => c.teamId)}::bigint[], ${restated.map((c) => c.state.row.id)}::bigint[], ${restated.map((c) => c.experimentId)}::bigint[],
        ${restated.map((c) => c.eventId)}::bigint[], ${restated.map((c) => c.after.count - c.before.count)}::bigint[], ${restated.map((c) => (c.after.value - c.before.value).toString())}::numeric[])
      on conflict (team_id, participant_id, experiment_id, event_id) do update set count = conversions.count + excluded.count, value = conversions.value + excluded.value
    ), tallied as (
      insert into variant_event_counts (team_id, variant_id, event_id, ${COLUMNS})
      select c.team_id, c.variant_id, c.event_id, ${gained} from ${tallies(rising)}
      on conflict (team_id, variant_id, event_id) do update set ${addedTo('variant_event_counts')}
    ), tallied_daily as (
      insert into daily_variant_event_counts (team_id, variant_id, event_id, day, ${COLUMNS})
      select c.team_id, c.variant_id, c.event_id, ${day}, ${gained} from ${tallies(counts)}
      on conflict (team_id, variant_id, event_id, day) do update set ${addedTo('daily_variant_event_counts')}
    )${
      falling.length === 0
        ? sql``
        : sql`, untallied as (
      update variant_event_counts t set ${addedTo('t')} from ${tallies(falling)}
      where t.team_id = c.team_id and t.variant_id = c.variant_id and t.event_id = c.event_id
    )`
    }${
      activity.length === 0
        ? sql``
        : sql`, active as (
      insert into pre_exposure_activity (team_id, participant_id, event_id, day, count, value)
      select a.team_id, coalesce((select ids from created)[a.created], a.participant_id), a.event_id, ${day}, a.count, a.value
      from unnest(${activity.map((a) => a.teamId)}::bigint[], ${activity.map((a) => a.state.row.id)}::bigint[], ${activity.map((a) => positionOf(a.state))}::int[],
        ${activity.map((a) => a.eventId)}::bigint[], ${activity.map((a) => a.count)}::bigint[], ${activity.map((a) => a.value.toString())}::numeric[])
        as a(team_id, participant_id, created, event_id, count, value)
      on conflict (team_id, participant_id, event_id, day) do update set count = pre_exposure_activity.count + excluded.count, value = pre_exposure_activity.value + excluded.value
    )`
    }${
      change.keys.length === 0
        ? sql``
        : sql`, keyed as (
      insert into ingest_keys (team_id, key, outcome, created_at)
      select *, ${at}::timestamptz from unnest(${change.keys.map((k) => k.teamId)}::bigint[], ${change.keys.map((k) => k.key)}::text[], ${change.keys.map((k) => k.outcome)}::text[])
      on conflict (team_id, key) do update set outcome = excluded.outcome, created_at = excluded.created_at where ingest_keys.created_at <= ${change.keyCutoff}::timestamptz
    )`
    }
    insert into ingest_usage (team_id, month, count)
    select team_id, ${month}, count from unnest(${quota.map(([team]) => team)}::bigint[], ${quota.map(([, count]) => count)}::bigint[]) as q(team_id, count)
    on conflict (team_id, month) do update set count = ingest_usage.count + excluded.count`;
}

const COLUMNS = sql.raw(EVENT_COUNTERS.map((counter) => counter.column).join(', '));

/** Each event counter of `table` plus what the change adds to it (`excluded`, or the unnested `c`). */
const addedTo = (table: string, added = table === 't' ? 'c' : 'excluded') => sql.raw(EVENT_COUNTERS.map(({ column }) => `${column} = ${table}.${column} + ${added}.${column}`).join(', '));
