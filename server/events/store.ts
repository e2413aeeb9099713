import type { Insertable, Selectable, Updateable } from 'kysely';
import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';
import type { Database } from '../storage/schema';
import { iso } from '../storage/values';

type Event = components['schemas']['Event'];
export type EventRow = Selectable<Database['events']>;

export function toEvent(row: EventRow): Event {
  return {
    key: row.key,
    description: row.description,
    type: row.type,
    cap: row.cap === null ? null : Number(row.cap),
    direction: row.direction,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function findEvent(db: Db, teamId: number, key: string): Promise<EventRow | undefined> {
  return db.selectFrom('events').selectAll().where('team_id', '=', teamId).where('key', '=', key).executeTakeFirst();
}

export async function listEvents(db: Db, teamId: number, limit: number, offset: number): Promise<EventRow[]> {
  return db.selectFrom('events').selectAll().where('team_id', '=', teamId).orderBy('key').limit(limit).offset(offset).execute();
}


/** Every event of the team by key, as the statistics and results list them. */
export async function eventsByKey(db: Db, teamId: number): Promise<Array<Pick<EventRow, 'id' | 'key' | 'type' | 'cap' | 'direction'>>> {
  return teamEventsByKey(db, { teamId });
}

const teamEventsByKey = prepared((db, arg: Bind<{ teamId: number }>) =>
  db
    .selectFrom('events')
    .select(['id', 'key', 'type', 'cap', 'direction'])
    .where('team_id', '=', arg((a) => a.teamId))
    .orderBy('key'),
);

export async function insertEvent(db: Db, row: Insertable<Database['events']>): Promise<EventRow> {
  return db.insertInto('events').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateEvent(db: Db, id: number, teamId: number, changes: Updateable<Database['events']>): Promise<EventRow> {
  return db.updateTable('events').set(changes).where('id', '=', id).where('team_id', '=', teamId).returningAll().executeTakeFirstOrThrow();
}

/** Whether any conversion of the event is stored (its sums are kept in its unit and cap). */
export async function hasConversions(db: Db, teamId: number, eventId: number): Promise<boolean> {
  const row = await db.selectFrom('conversions').select('event_id').where('team_id', '=', teamId).where('event_id', '=', eventId).limit(1).executeTakeFirst();
  return row !== undefined;
}

export async function deleteEvent(db: Db, id: number, teamId: number): Promise<void> {
  await db.deleteFrom('events').where('id', '=', id).where('team_id', '=', teamId).execute();
}

export async function experimentKeysWithGoal(db: Db, teamId: number, eventId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('experiments')
    .select('key')
    .where('team_id', '=', teamId)
    .where('event_id', '=', eventId)
    .orderBy('key')
    .execute();
  return rows.map((row) => row.key);
}
