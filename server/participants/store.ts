import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import type { ParticipantRow } from '../storage/schema';
import { iso } from '../storage/values';

type Participant = components['schemas']['Participant'];
type Attributes = components['schemas']['Attributes'];
export type { ParticipantRow };

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
