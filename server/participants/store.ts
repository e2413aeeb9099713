import type { Selectable } from 'kysely';
import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';
import type { Database } from '../storage/schema';
import { iso } from '../storage/values';

type Participant = components['schemas']['Participant'];
type Attributes = components['schemas']['Attributes'];
export type ParticipantRow = Selectable<Database['participants']>;

export interface ParticipantInput {
  key: string;
  notes?: string | null;
  attributes?: Attributes;
}

export function toParticipant(row: ParticipantRow): Participant {
  return {
    key: row.key,
    notes: row.notes,
    attributes: JSON.parse(row.attributes) as Attributes,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function findParticipant(db: Db, teamId: number, key: string): Promise<ParticipantRow | undefined> {
  return db.selectFrom('participants').selectAll().where('team_id', '=', teamId).where('key', '=', key).executeTakeFirst();
}

export async function listParticipants(db: Db, teamId: number, limit: number, offset: number): Promise<ParticipantRow[]> {
  return db.selectFrom('participants').selectAll().where('team_id', '=', teamId).orderBy('id').limit(limit).offset(offset).execute();
}


export async function insertParticipant(db: Db, teamId: number, input: ParticipantInput, at: string): Promise<ParticipantRow> {
  return db
    .insertInto('participants')
    .values(newRow(teamId, input, at))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Creates the participant, or updates the given fields of an existing one — atomically, so concurrent ingests agree. */
export async function upsertParticipant(db: Db, teamId: number, input: ParticipantInput, at: string): Promise<ParticipantRow> {
  const given = (['notes', 'attributes'] as const).filter((field) => input[field] !== undefined).join('+');
  const [row] = await participantUpsert(db, { row: newRow(teamId, input, at), changes: changesOf(input) }, given);
  return row;
}

type ParticipantInsert = ReturnType<typeof newRow>;

/** One per combination of the fields given (`shape`): every ingest runs one. */
const participantUpsert = prepared((db, arg: Bind<{ row: ParticipantInsert; changes: Partial<ParticipantInsert> }>, given: string) =>
  db
    .insertInto('participants')
    .values({
      team_id: arg((a) => a.row.team_id),
      key: arg((a) => a.row.key),
      notes: arg((a) => a.row.notes),
      attributes: arg((a) => a.row.attributes),
      created_at: arg((a) => a.row.created_at),
      updated_at: arg((a) => a.row.updated_at),
    })
    .onConflict((oc) =>
      // Only notes/attributes update an existing participant; the key is what it is matched by, so it is no change.
      oc.columns(['team_id', 'key']).doUpdateSet((eb) =>
        given === ''
          ? { key: eb.ref('excluded.key') }
          : {
              ...(given.split('+').includes('notes') && { notes: arg((a) => a.changes.notes) }),
              ...(given.split('+').includes('attributes') && { attributes: arg((a) => a.changes.attributes) }),
              updated_at: arg((a) => a.row.updated_at),
            },
      ),
    )
    .returningAll(),
);

export async function updateParticipant(db: Db, id: number, teamId: number, input: Partial<ParticipantInput>, at: string): Promise<ParticipantRow> {
  return db
    .updateTable('participants')
    .set({ ...changesOf(input), updated_at: at })
    .where('id', '=', id)
    .where('team_id', '=', teamId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Takes the participant's row lock (PostgreSQL) for the rest of the transaction: ingests of it wait. */
export async function lockParticipant(db: Db, id: number, teamId: number): Promise<void> {
  await db.updateTable('participants').set((eb) => ({ id: eb.ref('id') })).where('id', '=', id).where('team_id', '=', teamId).execute();
}

export async function findParticipantById(db: Db, teamId: number, id: number): Promise<ParticipantRow | undefined> {
  return db.selectFrom('participants').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

export async function deleteParticipant(db: Db, id: number, teamId: number): Promise<void> {
  await db.deleteFrom('participants').where('id', '=', id).where('team_id', '=', teamId).execute();
}

function newRow(teamId: number, input: ParticipantInput, at: string) {
  return { team_id: teamId, key: input.key, notes: input.notes ?? null, attributes: JSON.stringify(input.attributes ?? {}), created_at: at, updated_at: at };
}

function changesOf(input: Partial<ParticipantInput>) {
  return {
    ...(input.key !== undefined && { key: input.key }),
    ...(input.notes !== undefined && { notes: input.notes }),
    ...(input.attributes !== undefined && { attributes: JSON.stringify(input.attributes) }),
  };
}
