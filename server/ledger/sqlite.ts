import { CompiledQuery, sql } from 'kysely';
import type { ParticipantRow } from '../storage/schema';
import type { Db } from '../storage/database';
import { utcDay } from '../storage/values';
import { participantKey, type LedgerChange } from './change';
import { countersOf, EVENT_COUNTERS, takesBack, type EventDelta } from './counters';
import { ARM_EVENT_COUNTERS, rolloutCountersOf } from './rollout-counters';
import { keyId, NO_HISTORIES, type FlushRead, type Histories, type Ledger, type NamedKey, type NamedParticipant, type Opening, type StoredParticipants } from './port';
import { writeWithdrawals } from './withdrawals';

// A writer in any process waits here (busy timeout) until the others have committed.
const BEGIN = CompiledQuery.raw('begin immediate');
// A reader takes no lock: it reads one snapshot of the database (WAL) while writers commit.
const BEGIN_READ = CompiledQuery.raw('begin');
const END_READ = CompiledQuery.raw('rollback');
const COMMIT = CompiledQuery.raw('commit');

/** Rows bound as one parameter: a JSON array of arrays, read back by `json_each` and `->>`. */
const rowsOf = (rows: unknown[][]) => JSON.stringify(rows);

/**
 * SQLite: the same flush as PostgreSQL's, with rows bound as JSON arrays (`json_each`). No
 * round trips to save here; what a flush saves is SQLite's per-statement work: two reads (one
 * when every ingest is refused, three more when some participants are stored already, one more
 * when some carry an idempotency key) in its snapshot, the same again under the write lock, and
 * at most ten writes a flush, where each ingest alone took about ten statements.
 */
export const sqliteLedger: Ledger = {
  async open(connection, opening) {
    await connection.executeQuery(BEGIN);
    return reads(connection, opening);
  },

  // One write lock serves every team of every process: a flush decides — evaluates conditions,
  // places participants — on what it read in a snapshot, and under the lock only reads again to
  // check it (ingest/snapshot-check.ts). A team's hostile conditions keep no other team's writer waiting.
  snapshot: {
    async open(connection, opening) {
      await connection.executeQuery(BEGIN_READ);
      return reads(connection, opening);
    },
    // It wrote nothing: a flush's commit stays the one of its write.
    async close(connection) {
      await connection.executeQuery(END_READ);
    },
  },

  participants: storedParticipants,

  async commit(connection, change) {
    if (change) await write(connection, change);
    await connection.executeQuery(COMMIT);
  },

  write,

  opensWhileWriting: false,
  // better-sqlite3 writes on the event loop: every other request waits out the flush too, about
  // 10 ms for these rows (bench/results/2026-11-27-postgres-flush-rows.md).
  flushRows: 1000,
};

async function reads(db: Db, { teams, month, keys, cutoff, expected }: Opening): Promise<{ read: FlushRead; participants: StoredParticipants }> {
  return { read: await read(db, teams, month, keys, cutoff), participants: await storedParticipants(db, expected) };
}

async function storedParticipants(db: Db, named: NamedParticipant[]): Promise<StoredParticipants> {
  if (named.length === 0) return { rows: [], histories: NO_HISTORIES };
  const rows = await participants(db, named);
  return { rows, histories: rows.length === 0 ? NO_HISTORIES : await histories(db, rows) };
}

async function read(db: Db, teams: number[], month: string, keys: NamedKey[], cutoff: string): Promise<FlushRead> {
    const { rows } = await sql<{ id: number; config_version: number; used: number }>`
      select t.id, t.config_version, coalesce(u.count, 0) as used
      from teams t left join ingest_usage u on u.team_id = t.id and u.month = ${month}
      where t.id in (select value from json_each(${JSON.stringify(teams)}))`.execute(db);
    const read: FlushRead = { versions: new Map(), used: new Map(), keys: new Map() };
    for (const row of rows) {
      read.versions.set(row.id, row.config_version);
      read.used.set(row.id, Number(row.used));
    }
    if (keys.length > 0) {
      const stored = await sql<{ team_id: number; key: string; outcome: string }>`
        select k.team_id, k.key, k.outcome from json_each(${rowsOf(keys.map((k) => [k.team, k.key]))}) n
        join ingest_keys k on k.team_id = n.value ->> 0 and k.key = n.value ->> 1
        where k.created_at > ${cutoff}`.execute(db);
      for (const row of stored.rows) read.keys.set(keyId(row.team_id, row.key), row.outcome);
    }
    return read;
}

async function participants(db: Db, named: NamedParticipant[]): Promise<ParticipantRow[]> {
    const { rows } = await sql<ParticipantRow>`
      select p.* from (select distinct value ->> 0 as team_id, value ->> 1 as key from json_each(${rowsOf(named.map((n) => [n.team, n.key]))})) k
      join participants p on p.team_id = k.team_id and p.key = k.key`.execute(db);
    return rows;
}

async function histories(db: Db, participants: ParticipantRow[]): Promise<Histories> {
    const ids = rowsOf(participants.map((p) => [p.team_id, p.id]));
    const enrolments = await sql<Histories['enrolments'][number]>`
      select e.participant_id, e.id, e.experiment_id, e.variant_id, x.key as experiment_key, x.status, v.key as variant_key, e.enrolled_at
      from json_each(${ids}) k
      join enrolments e on e.team_id = k.value ->> 0 and e.participant_id = k.value ->> 1
      join experiments x on x.id = e.experiment_id join variants v on v.id = e.variant_id
      order by e.id`.execute(db);
    const exclusions = await sql<Histories['exclusions'][number]>`
      select x.participant_id, x.experiment_id from json_each(${ids}) k join exclusions x on x.team_id = k.value ->> 0 and x.participant_id = k.value ->> 1`.execute(db);
    const conversions = await sql<Histories['conversions'][number]>`
      select c.participant_id, c.experiment_id, c.event_id, c.count, c.value from json_each(${ids}) k
      join conversions c on c.team_id = k.value ->> 0 and c.participant_id = k.value ->> 1`.execute(db);
    const covariates = await sql<Histories['covariates'][number]>`
      select c.participant_id, c.experiment_id, c.event_id, c.x from json_each(${ids}) k
      join enrolment_covariates c on c.team_id = k.value ->> 0 and c.participant_id = k.value ->> 1`.execute(db);
    const activity = await sql<Histories['activity'][number]>`
      select a.participant_id, a.event_id, a.day, a.count, a.value, e.type, e.cap from json_each(${ids}) k
      join pre_exposure_activity a on a.team_id = k.value ->> 0 and a.participant_id = k.value ->> 1
      join events e on e.id = a.event_id`.execute(db);
    const rolloutExposures = await sql<Histories['rolloutExposures'][number]>`
      select x.participant_id, x.rollout_id, x.arm from json_each(${ids}) k
      join rollout_exposures x on x.team_id = k.value ->> 0 and x.participant_id = k.value ->> 1
      join rollouts r on r.id = x.rollout_id where r.state in ('running', 'paused')`.execute(db);
    const rolloutConversions = await sql<Histories['rolloutConversions'][number]>`
      select c.participant_id, c.rollout_id, c.event_id, c.count, c.value from json_each(${ids}) k
      join rollout_conversions c on c.team_id = k.value ->> 0 and c.participant_id = k.value ->> 1
      join rollouts r on r.id = c.rollout_id where r.state in ('running', 'paused')`.execute(db);
    return {
      enrolments: enrolments.rows,
      exclusions: exclusions.rows,
      conversions: conversions.rows,
      covariates: covariates.rows,
      activity: activity.rows,
      rolloutExposures: rolloutExposures.rows,
      rolloutConversions: rolloutConversions.rows,
    };
}

async function write(db: Db, change: LedgerChange): Promise<void> {
  const states = [...change.participants.values()];
  const created = states.filter((state) => state.isNew);
  const changed = states.filter((state) => state.changed);
  if (created.length > 0) {
    const { rows } = await sql<{ id: number; team_id: number; key: string }>`insert into participants (team_id, key, notes, attributes, created_at, updated_at)
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 from json_each(${rowsOf(created.map(({ row }) => [row.team_id, row.key, row.notes, row.attributes, row.created_at, row.updated_at]))})
        order by key
        returning id, team_id, key`.execute(db);
    // The ids the statements after this one name the new participants by.
    const ids = new Map(rows.map((row) => [participantKey(row.team_id, row.key), row.id]));
    for (const state of created) state.row = { ...state.row, id: ids.get(participantKey(state.row.team_id, state.row.key))! };
  }
  if (changed.length > 0) {
    await sql`update participants set notes = d.value ->> 1, attributes = d.value ->> 2, updated_at = d.value ->> 3
        from json_each(${rowsOf(changed.map(({ row }) => [row.id, row.notes, row.attributes, row.updated_at]))}) d
        where participants.id = d.value ->> 0`.execute(db);
  }
  await writeCounts(db, change);
  await writeRolloutArms(db, change);
  await writeWithdrawals(db, change);
}

/** The rollouts' exposures, guardrail conversions and their arms' counters; a statement each, and none without exposures or conversions. */
async function writeRolloutArms(db: Db, change: LedgerChange): Promise<void> {
  const { arms, events } = rolloutCountersOf(change);
  if (change.rolloutExposures.length > 0) {
    await sql`insert into rollout_exposures (team_id, rollout_id, participant_id, arm, exposed_at)
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3, ${change.at} from json_each(${rowsOf(change.rolloutExposures.map((e) => [e.teamId, e.rolloutId, e.state.row.id, e.arm]))})`.execute(db);
    await sql`insert into rollout_arm_counts (team_id, rollout_id, arm, participants)
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3 from json_each(${rowsOf(arms.map((a) => [a.teamId, a.rolloutId, a.arm, a.participants]))}) where true
        on conflict (rollout_id, arm) do update set participants = participants + excluded.participants`.execute(db);
  }
  if (change.rolloutConversions.size > 0) {
    const moves = [...change.rolloutConversions.values()];
    await sql`insert into rollout_conversions (team_id, rollout_id, participant_id, event_id, count, value)
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5
        from json_each(${rowsOf(moves.map((c) => [c.teamId, c.rolloutId, c.state.row.id, c.eventId, c.after.count - c.before.count, (c.after.value - c.before.value).toString()]))}) where true
        on conflict (rollout_id, participant_id, event_id) do update set count = count + excluded.count, value = exact_add(value, excluded.value)`.execute(db);
    await sql`insert into rollout_arm_event_counts (team_id, rollout_id, arm, event_id, ${ARM_COLUMNS})
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3, ${ARM_VALUES}
        from json_each(${rowsOf(events.map((e) => [e.teamId, e.rolloutId, e.arm, e.eventId, ...ARM_EVENT_COUNTERS.map((column) => e.counters[column].toString())]))}) where true
        on conflict (rollout_id, arm, event_id) do update set ${ARM_ADDED}`.execute(db);
  }
}

const ARM_COLUMNS = sql.raw(ARM_EVENT_COUNTERS.join(', '));
const ARM_VALUES = sql.raw(ARM_EVENT_COUNTERS.map((column, i) => (column.startsWith('sum') ? `value ->> ${i + 4}` : `cast(value ->> ${i + 4} as integer)`)).join(', '));
const ARM_ADDED = sql.raw(ARM_EVENT_COUNTERS.map((column) => (column.startsWith('sum') ? `${column} = exact_add(${column}, excluded.${column})` : `${column} = ${column} + excluded.${column}`)).join(', '));

/** Each event counter's column, and how a stored value and a delta add up: exact sums travel as decimal strings (JSON numbers would round them). */
const COLUMNS = sql.raw(EVENT_COUNTERS.map((counter) => counter.column).join(', '));
const VALUES = sql.raw(EVENT_COUNTERS.map((_, i) => `value ->> ${i + 3}`).join(', '));
const ADDED = sql.raw(EVENT_COUNTERS.map(({ column, exact }) => (exact ? `${column} = exact_add(${column}, excluded.${column})` : `${column} = ${column} + excluded.${column}`)).join(', '));

// A change that takes back (a removal) updates the totals: their checks refuse a negative row even where it would update one.
const ADDED_TO_TOTALS = sql.raw(
  EVENT_COUNTERS.map(({ column, exact }, i) => (exact ? `${column} = exact_add(${column}, d.value ->> ${i + 3})` : `${column} = ${column} + (d.value ->> ${i + 3})`)).join(', '),
);

/** Everything but the participants' own rows: enrolments, counters and their roll-up, conversions, idempotency keys, quota; a statement each. */
async function writeCounts(db: Db, change: LedgerChange): Promise<void> {
  const day = utcDay(change.at);
  const counters = countersOf(change);
  const variants = counters.variants.map((v) => [v.variantId, v.teamId, v.participants]);
  const row = (c: EventDelta) => [c.teamId, c.variantId, c.eventId, ...EVENT_COUNTERS.map(({ column, exact }) => (exact ? c.counters[column].toString() : Number(c.counters[column])))];
  const counts = counters.events.map(row);
  const falling = counters.events.filter(takesBack);
  const rising = falling.length === 0 ? counts : counters.events.filter((delta) => !takesBack(delta)).map(row);
  // A conversion whose participant leaves the experiment goes with its enrolment (writeWithdrawals).
  const conversions = [...change.conversions.values()].filter((c) => c.after.count > 0);
  if (change.enrolments.length > 0) {
    // In the order the ingests enrolled: a participant's assignments are answered in it.
    await sql`insert into enrolments (team_id, participant_id, experiment_id, variant_id, enrolled_at)
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3, ${change.at} from json_each(${rowsOf(change.enrolments.map((e) => [e.teamId, e.state.row.id, e.experimentId, e.variantId]))})
        order by key`.execute(db);
    const covariates = change.enrolments.flatMap((e) => e.covariates.map((c) => [e.teamId, e.state.row.id, e.experimentId, c.eventId, c.x.toString()]));
    if (covariates.length > 0) {
      await sql`insert into enrolment_covariates (team_id, participant_id, experiment_id, event_id, x)
          select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 from json_each(${rowsOf(covariates)})`.execute(db);
    }
  }
  if (variants.length > 0) {
    await sql`update variants set participants = participants + (d.value ->> 2)
        from json_each(${rowsOf(variants)}) d where variants.id = d.value ->> 0 and variants.team_id = d.value ->> 1`.execute(db);
    await sql`insert into daily_variant_counts (team_id, variant_id, day, participants)
        select value ->> 1, value ->> 0, ${day}, value ->> 2 from json_each(${rowsOf(variants)}) where true
        on conflict (team_id, variant_id, day) do update set participants = participants + excluded.participants`.execute(db);
  }
  if (conversions.length > 0) {
    await sql`insert into conversions (team_id, participant_id, experiment_id, event_id, count, value)
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5
        from json_each(${rowsOf(conversions.map((c) => [c.teamId, c.state.row.id, c.experimentId, c.eventId, c.after.count - c.before.count, (c.after.value - c.before.value).toString()]))}) where true
        on conflict (team_id, participant_id, experiment_id, event_id) do update set count = count + excluded.count, value = exact_add(value, excluded.value)`.execute(db);
  }
  if (falling.length > 0) {
    await sql`update variant_event_counts set ${ADDED_TO_TOTALS}
        from json_each(${rowsOf(falling.map(row))}) d where team_id = d.value ->> 0 and variant_id = d.value ->> 1 and event_id = d.value ->> 2`.execute(db);
  }
  if (rising.length > 0) {
    await sql`insert into variant_event_counts (team_id, variant_id, event_id, ${COLUMNS})
        select value ->> 0, value ->> 1, value ->> 2, ${VALUES} from json_each(${rowsOf(rising)}) where true
        on conflict (team_id, variant_id, event_id) do update set ${ADDED}`.execute(db);
  }
  if (counts.length > 0) {
    await sql`insert into daily_variant_event_counts (team_id, variant_id, event_id, day, ${COLUMNS})
        select value ->> 0, value ->> 1, value ->> 2, ${day}, ${VALUES} from json_each(${rowsOf(counts)}) where true
        on conflict (team_id, variant_id, event_id, day) do update set ${ADDED}`.execute(db);
  }
  if (change.activity.size > 0) {
    await sql`insert into pre_exposure_activity (team_id, participant_id, event_id, day, count, value)
        select value ->> 0, value ->> 1, value ->> 2, ${day}, value ->> 3, value ->> 4
        from json_each(${rowsOf([...change.activity.values()].map((a) => [a.teamId, a.state.row.id, a.eventId, a.count, a.value.toString()]))}) where true
        on conflict (team_id, participant_id, event_id, day) do update set count = count + excluded.count, value = exact_add(value, excluded.value)`.execute(db);
  }
  if (change.keys.length > 0) {
    await sql`insert into ingest_keys (team_id, key, outcome, created_at)
        select value ->> 0, value ->> 1, value ->> 2, ${change.at} from json_each(${rowsOf(change.keys.map((k) => [k.teamId, k.key, k.outcome]))}) where true
        on conflict (team_id, key) do update set outcome = excluded.outcome, created_at = excluded.created_at where ingest_keys.created_at <= ${change.keyCutoff}`.execute(db);
  }
  if (change.quota.size > 0) {
    await sql`insert into ingest_usage (team_id, month, count)
        select value ->> 0, ${change.month}, value ->> 1 from json_each(${rowsOf([...change.quota.entries()])}) where true
        on conflict (team_id, month) do update set count = count + excluded.count`.execute(db);
  }
}
