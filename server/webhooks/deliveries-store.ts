import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Database, Db } from '../storage/schema';

/** The one module that writes webhook_deliveries: the outbox. */
export type DeliveryRow = Selectable<Database['webhook_deliveries']>;

export async function insertDelivery(trx: Db, delivery: Insertable<Database['webhook_deliveries']>): Promise<DeliveryRow> {
  return trx.insertInto('webhook_deliveries').values(delivery).returningAll().executeTakeFirstOrThrow();
}

/** An endpoint's deliveries, newest first. */
export async function listDeliveries(db: Db, endpointId: number, limit: number): Promise<DeliveryRow[]> {
  return db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).orderBy('number', 'desc').limit(limit).execute();
}

export async function findDelivery(db: Db, endpointId: number, number: number): Promise<DeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).where('number', '=', number).executeTakeFirst();
}

/** The oldest `limit` pending deliveries of an endpoint, oldest first: the next to send, whatever is queued after them. */
export async function queueHead(db: Db, endpointId: number, limit: number): Promise<DeliveryRow[]> {
  return db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).where('status', '=', 'pending').orderBy('number').limit(limit).execute();
}

/** Enabled endpoints with a pending delivery due by `at` whose lease is free: the queues to work on. */
export async function dueEndpoints(db: Db, at: string, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_deliveries.endpoint_id')
    .select('webhook_deliveries.endpoint_id')
    .distinct()
    .where('webhook_deliveries.status', '=', 'pending')
    .where('webhook_deliveries.next_attempt_at', '<=', at)
    .where('webhook_endpoints.enabled', '=', true)
    .where((eb) => eb.or([eb('webhook_endpoints.lease_until', 'is', null), eb('webhook_endpoints.lease_until', '<', at)]))
    .limit(limit)
    .execute();
  return rows.map((row) => row.endpoint_id);
}

export async function updateDelivery(db: Db, id: number, changes: Updateable<Database['webhook_deliveries']>): Promise<void> {
  await db.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
}

/** Records deliveries that were answered `status` (a 2xx), all at `at`; the first attempt of one never tried before is the batch's first send. */
export async function markDelivered(db: Db, ids: number[], outcome: { status: number; firstAttemptAt: string; at: string }): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: 'delivered',
      attempts: eb('attempts', '+', 1),
      last_status: outcome.status,
      last_error: null,
      last_attempt_at: outcome.at,
      first_attempt_at: sql<string>`coalesce(first_attempt_at, ${outcome.firstAttemptAt})`,
      next_attempt_at: null,
      delivered_at: outcome.at,
    }))
    .where('id', 'in', ids)
    .execute();
}

/** Deletes the deliveries queued before `cutoff` that are done (delivered or failed); answers how many. */
export async function deleteDoneBefore(db: Db, cutoff: string): Promise<number> {
  const result = await db.deleteFrom('webhook_deliveries').where('created_at', '<', cutoff).where('status', '<>', 'pending').executeTakeFirst();
  return Number(result.numDeletedRows);
}
