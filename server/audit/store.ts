import type { Insertable, Selectable } from 'kysely';
import type { Database, Db } from '../storage/schema';

export type AuditRow = Selectable<Database['audit_log']>;

export async function insertEntry(trx: Db, entry: Insertable<Database['audit_log']>): Promise<AuditRow> {
  return trx.insertInto('audit_log').values(entry).returningAll().executeTakeFirstOrThrow();
}

export interface EntryFilter {
  /** Entries with an id below this one (the cursor). */
  below?: number;
  resourceType?: string;
  resourceKey?: string;
  actorType?: 'user' | 'admin-cli' | 'service';
  actorEmail?: string;
  since?: string;
  until?: string;
}

/** A team's entries matching the filter, newest first. */
export async function listEntries(db: Db, teamId: number, filter: EntryFilter, limit: number): Promise<AuditRow[]> {
  let query = db.selectFrom('audit_log').selectAll().where('team_id', '=', teamId);
  if (filter.below !== undefined) query = query.where('id', '<', filter.below);
  if (filter.resourceType !== undefined) query = query.where('resource_type', '=', filter.resourceType);
  if (filter.resourceKey !== undefined) query = query.where('resource_key', '=', filter.resourceKey);
  if (filter.actorType !== undefined) query = query.where('actor_type', '=', filter.actorType);
  if (filter.actorEmail !== undefined) query = query.where('actor_email', '=', filter.actorEmail);
  if (filter.since !== undefined) query = query.where('at', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('at', '<', filter.until);
  return query.orderBy('id', 'desc').limit(limit).execute();
}

/** Deletes the entries written before `cutoff`; answers how many. */
export async function deleteOlderThan(db: Db, cutoff: string): Promise<number> {
  const result = await db.deleteFrom('audit_log').where('at', '<', cutoff).executeTakeFirst();
  return Number(result.numDeletedRows);
}
