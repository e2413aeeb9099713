import { PostgresAdapter, type Insertable, type Selectable, type Updateable } from 'kysely';
import { jsonArrayFrom as postgresJsonArray } from 'kysely/helpers/postgres';
import { jsonArrayFrom as sqliteJsonArray } from 'kysely/helpers/sqlite';
import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';
import type { Database } from '../storage/schema';
import { toPercent } from '../../domain/coverage';
import { iso, isoOrNull } from '../storage/values';
import { conditionsOf, exclusionGroupOf } from './targeting';

type Experiment = components['schemas']['Experiment'];
/** `guardrail_events`: the guardrail events in order, as an array (PostgreSQL) or its JSON text (SQLite). */
export type ExperimentRow = Selectable<Database['experiments']> & { event_key: string; guardrail_events: GuardrailEvent[] | string };
export interface GuardrailEvent {
  id: number;
  key: string;
}

export function guardrailsOf(row: Pick<ExperimentRow, 'guardrail_events'>): GuardrailEvent[] {
  const events = typeof row.guardrail_events === 'string' ? (JSON.parse(row.guardrail_events) as GuardrailEvent[]) : row.guardrail_events;
  return events.map((event) => ({ id: Number(event.id), key: event.key }));
}
export type ExperimentStatus = ExperimentRow['status'];

export function toExperiment(row: ExperimentRow): Experiment {
  return {
    key: row.key,
    description: row.description,
    status: row.status,
    event: row.event_key,
    guardrails: guardrailsOf(row).map((event) => event.key),
    minimum_effect: row.minimum_effect,
    pre_exposure_days: row.pre_exposure_days,
    seed: row.seed,
    hash_version: row.hash_version,
    conditions: conditionsOf(row),
    coverage: toPercent(row.coverage),
    exclusion_group: exclusionGroupOf(row),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    started_at: isoOrNull(row.started_at),
    stopped_at: isoOrNull(row.stopped_at),
  };
}

/** Experiments of a team with their goal event's key: what every read of an experiment selects. */
export function selectExperiments(db: Db, teamId: number) {
  return db
    .selectFrom('experiments')
    .innerJoin('events', 'events.id', 'experiments.event_id')
    .selectAll('experiments')
    .select('events.key as event_key')
    .select((eb) =>
      (db.getExecutor().adapter instanceof PostgresAdapter ? postgresJsonArray : sqliteJsonArray)(
        eb
          .selectFrom('experiment_guardrails as g')
          .innerJoin('events as ge', 'ge.id', 'g.event_id')
          .select(['ge.id', 'ge.key'])
          .whereRef('g.experiment_id', '=', 'experiments.id')
          .orderBy('g.position'),
      ).as('guardrail_events'),
    )
    .where('experiments.team_id', '=', teamId);
}

export async function findExperiment(db: Db, teamId: number, key: string): Promise<ExperimentRow | undefined> {
  return (await experimentByKey(db, { teamId, key }))[0];
}

// Every read of an experiment (its statistics and results included) starts here.
const experimentByKey = prepared((db, arg: Bind<{ teamId: number; key: string }>) =>
  selectExperiments(db, arg((a) => a.teamId)).where('experiments.key', '=', arg((a) => a.key)),
);

export async function findExperimentById(db: Db, teamId: number, id: number): Promise<ExperimentRow> {
  return selectExperiments(db, teamId).where('experiments.id', '=', id).executeTakeFirstOrThrow();
}

export async function listExperiments(db: Db, teamId: number, limit: number, offset: number): Promise<ExperimentRow[]> {
  return selectExperiments(db, teamId).orderBy('experiments.key').limit(limit).offset(offset).execute();
}

export async function listRunningExperiments(db: Db, teamId: number): Promise<ExperimentRow[]> {
  return selectExperiments(db, teamId).where('experiments.status', '=', 'running').orderBy('experiments.id').execute();
}


/** The running experiments of an exclusion group. */
export async function runningInGroup(db: Db, teamId: number, groupKey: string): Promise<ExperimentRow[]> {
  return selectExperiments(db, teamId).where('experiments.status', '=', 'running').where('experiments.group_key', '=', groupKey).orderBy('experiments.key').execute();
}

export async function recordCoverageChange(db: Db, change: Insertable<Database['coverage_changes']>): Promise<void> {
  await db.insertInto('coverage_changes').values(change).execute();
}

export async function coverageChangesOf(db: Db, teamId: number, experimentId: number) {
  return db
    .selectFrom('coverage_changes')
    .select(['changed_at', 'from_coverage', 'to_coverage'])
    .where('team_id', '=', teamId)
    .where('experiment_id', '=', experimentId)
    .orderBy('id')
    .execute();
}

export async function insertExperiment(db: Db, row: Insertable<Database['experiments']>): Promise<number> {
  const inserted = await db.insertInto('experiments').values(row).returning('id').executeTakeFirstOrThrow();
  return inserted.id;
}

export async function updateExperiment(db: Db, id: number, teamId: number, changes: Updateable<Database['experiments']>): Promise<void> {
  await db.updateTable('experiments').set(changes).where('id', '=', id).where('team_id', '=', teamId).execute();
}

/** Changes the status only if it still is `from`: concurrent start/stop cannot both win. */
export async function transition(db: Db, id: number, teamId: number, from: ExperimentStatus, changes: Updateable<Database['experiments']>): Promise<boolean> {
  const result = await db
    .updateTable('experiments')
    .set(changes)
    .where('id', '=', id)
    .where('team_id', '=', teamId)
    .where('status', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deleteExperiment(db: Db, id: number, teamId: number): Promise<void> {
  await db.deleteFrom('experiments').where('id', '=', id).where('team_id', '=', teamId).execute();
}

/** Takes the experiment's row lock (PostgreSQL) so that state checks and writes cannot interleave. */
export async function lockExperiment(db: Db, id: number, teamId: number): Promise<void> {
  await db.updateTable('experiments').set((eb) => ({ id: eb.ref('id') })).where('id', '=', id).where('team_id', '=', teamId).execute();
}

/** Replaces the experiment's guardrails by these events, in this order. */
export async function replaceGuardrails(db: Db, teamId: number, experimentId: number, eventIds: number[]): Promise<void> {
  await db.deleteFrom('experiment_guardrails').where('experiment_id', '=', experimentId).where('team_id', '=', teamId).execute();
  if (eventIds.length === 0) return;
  await db
    .insertInto('experiment_guardrails')
    .values(eventIds.map((event_id, position) => ({ team_id: teamId, experiment_id: experimentId, event_id, position })))
    .execute();
}
