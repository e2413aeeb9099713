import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Database, Db } from '../storage/schema';

/** The one module that writes webhook_endpoints: the endpoints themselves, and the lease of the process delivering each one's queue. */
export type EndpointRow = Selectable<Database['webhook_endpoints']>;

export async function insertEndpoint(trx: Db, endpoint: Insertable<Database['webhook_endpoints']>): Promise<EndpointRow> {
  return trx.insertInto('webhook_endpoints').values(endpoint).returningAll().executeTakeFirstOrThrow();
}

export async function listEndpoints(db: Db, teamId: number): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('team_id', '=', teamId).orderBy('id').execute();
}

export async function countEndpoints(trx: Db, teamId: number): Promise<number> {
  const row = await trx.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('total')).where('team_id', '=', teamId).executeTakeFirstOrThrow();
  return Number(row.total);
}

export async function findEndpoint(db: Db, teamId: number, key: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('team_id', '=', teamId).where('key', '=', key).executeTakeFirst();
}

/**
 * Takes the next delivery number of the endpoint. The row's lock, held to the end of the
 * transaction, makes concurrent changes queue for one endpoint one after the other: numbers follow
 * the order their changes commit in.
 */
export async function nextDeliveryNumber(trx: Db, id: number): Promise<number> {
  const row = await trx.updateTable('webhook_endpoints').set((eb) => ({ deliveries_queued: eb('deliveries_queued', '+', 1) })).where('id', '=', id).returning('deliveries_queued').executeTakeFirstOrThrow();
  return Number(row.deliveries_queued);
}

/** The endpoint by id alone (the delivery worker's view); undefined once deleted. */
export async function endpointById(db: Db, id: number): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The team's enabled endpoints and what each wants: read in every audited change's transaction. */
export async function enabledEndpoints(trx: Db, teamId: number): Promise<Array<{ id: number; event_types: string }>> {
  return trx.selectFrom('webhook_endpoints').select(['id', 'event_types']).where('team_id', '=', teamId).where('enabled', '=', true).execute();
}

export async function updateEndpoint(trx: Db, id: number, changes: Updateable<Database['webhook_endpoints']>): Promise<EndpointRow> {
  return trx.updateTable('webhook_endpoints').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function deleteEndpoint(trx: Db, id: number): Promise<void> {
  await trx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
}

/** A receiver answered 410 Gone: the endpoint stops taking and sending deliveries until a member enables it. */
export async function disableEndpoint(db: Db, id: number, reason: string, at: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ enabled: false, disabled_reason: reason, updated_at: at }).where('id', '=', id).execute();
}

/**
 * Takes (or renews) the lease on an endpoint's queue for `owner` until `until`: a compare-and-set
 * that succeeds only when the lease is free, expired, or already `owner`'s. On PostgreSQL a
 * concurrent claim waits for this row's lock and then sees the new lease, so exactly one process
 * holds an endpoint at a time. Answers whether `owner` holds it.
 */
export async function claimLease(db: Db, id: number, owner: string, at: string, until: string): Promise<boolean> {
  const claimed = await db
    .updateTable('webhook_endpoints')
    .set({ lease_owner: owner, lease_until: until })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', at), eb('lease_owner', '=', owner)]))
    .returning('id')
    .executeTakeFirst();
  return claimed !== undefined;
}

export async function releaseLease(db: Db, id: number, owner: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ lease_owner: null, lease_until: null }).where('id', '=', id).where('lease_owner', '=', owner).execute();
}
