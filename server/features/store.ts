import type { Insertable, Selectable, Updateable } from 'kysely';
import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import type { Database } from '../storage/schema';
import { iso } from '../storage/values';

type Feature = components['schemas']['Feature'];
export type FeatureRow = Selectable<Database['features']>;

export function toFeature(row: FeatureRow): Feature {
  return {
    key: row.key,
    description: row.description,
    type: row.type,
    enabled: Boolean(row.enabled),
    value: row.value,
    rules: rulesOf(row),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function rulesOf(row: Pick<FeatureRow, 'rules'>): Feature['rules'] {
  return JSON.parse(row.rules) as Feature['rules'];
}

export async function findFeature(db: Db, teamId: number, key: string): Promise<FeatureRow | undefined> {
  return db.selectFrom('features').selectAll().where('team_id', '=', teamId).where('key', '=', key).executeTakeFirst();
}

export async function listFeatures(db: Db, teamId: number, limit: number, offset: number): Promise<FeatureRow[]> {
  return db.selectFrom('features').selectAll().where('team_id', '=', teamId).orderBy('key').limit(limit).offset(offset).execute();
}


export async function insertFeature(db: Db, row: Insertable<Database['features']>): Promise<FeatureRow> {
  return db.insertInto('features').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The changed row, or undefined when the flag is gone (deleted since it was read). */
export async function updateFeature(db: Db, id: number, teamId: number, changes: Updateable<Database['features']>): Promise<FeatureRow | undefined> {
  return db.updateTable('features').set(changes).where('id', '=', id).where('team_id', '=', teamId).returningAll().executeTakeFirst();
}

/** The deleted row, or undefined when the flag is already gone. */
export async function deleteFeature(db: Db, id: number, teamId: number): Promise<FeatureRow | undefined> {
  return db.deleteFrom('features').where('id', '=', id).where('team_id', '=', teamId).returningAll().executeTakeFirst();
}
