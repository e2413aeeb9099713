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

/**
 * Creates the participant, or updates the given fields of an existing one. `isNew` says which —
 * known from the insert itself, never from timestamps: two ingests of one participant can run in
 * the same millisecond, and the second must still read the first one's exclusions.
 */
export async function upsertParticipant(db: Db, teamId: number, input: ParticipantInput, at: string): Promise<{ row: ParticipantRow; isNew: boolean }> {
  const [created] = await participantInsert(db, newRow(teamId, input, at));
  if (created) return { row: created, isNew: true };
  const given = (['notes', 'attributes'] as const).filter((field) => input[field] !== undefined).join('+');
  const changes = { teamId, key: input.key, changes: changesOf(input), at };
  const [existing] = given === '' ? await participantByKey(db, changes) : await participantChange(db, changes, given);
  // Deleted by a transaction that committed after the insert looked (SQLite: none can; PostgreSQL:
  // another team lock holder): it is new again.
  return existing ? { row: existing, isNew: false } : upsertParticipant(db, teamId, input, at);
}

type ParticipantInsert = ReturnType<typeof newRow>;
type ParticipantChange = { teamId: number; key: string; changes: Partial<ParticipantInsert>; at: string };

/** Inserts the participant unless the team has its key (then no row: a concurrent insert of the key is waited for). */
const participantInsert = prepared((db, arg: Bind<ParticipantInsert>) =>
  db
    .insertInto('participants')
    .values({
      team_id: arg((row) => row.team_id),
      key: arg((row) => row.key),
      notes: arg((row) => row.notes),
      attributes: arg((row) => row.attributes),
      created_at: arg((row) => row.created_at),
      updated_at: arg((row) => row.updated_at),
    })
    .onConflict((oc) => oc.columns(['team_id', 'key']).doNothing())
    .returningAll(),
);

const participantByKey = prepared((db, arg: Bind<ParticipantChange>) =>
  db.selectFrom('participants').selectAll().where('team_id', '=', arg((a) => a.teamId)).where('key', '=', arg((a) => a.key)),
);

/** One per combination of the fields given (`given`): notes, attributes or both. */
const participantChange = prepared((db, arg: Bind<ParticipantChange>, given: string) =>
  db
    .updateTable('participants')
    .set({
      ...(given.split('+').includes('notes') && { notes: arg((a) => a.changes.notes) }),
      ...(given.split('+').includes('attributes') && { attributes: arg((a) => a.changes.attributes) }),
      updated_at: arg((a) => a.at),
    })
    .where('team_id', '=', arg((a) => a.teamId))
    .where('key', '=', arg((a) => a.key))
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
