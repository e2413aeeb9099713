import type { Insertable, Selectable, Updateable } from 'kysely';
import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';
import type { Database } from '../storage/schema';
import { iso, isoOrNull } from '../storage/values';

type Experiment = components['schemas']['Experiment'];
export type ExperimentRow = Selectable<Database['experiments']> & { event_key: string };
export type ExperimentStatus = ExperimentRow['status'];

export function toExperiment(row: ExperimentRow): Experiment {
  return {
    key: row.key,
    description: row.description,
    status: row.status,
    event: row.event_key,
    seed: row.seed,
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
