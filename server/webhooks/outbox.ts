import type { components } from '../../generated/api';
import type { Db } from '../storage/schema';
import { now } from '../storage/values';
import { insertDelivery, type DeliveryRow } from './deliveries-store';
import { enabledEndpoints, nextDeliveryNumber } from './endpoints-store';
import { eventTypeOf, wants } from './event-types';

type AuditEntry = components['schemas']['AuditEntry'];

/**
 * Queues a delivery of `entry` to each of the team's enabled endpoints that wants its type, in
 * `trx` — the transaction of the change and its audit entry, so the three commit or roll back
 * together. The body is fixed now: every attempt sends the same bytes.
 */
export async function enqueueDeliveries(trx: Db, teamId: number, entry: AuditEntry): Promise<void> {
  const endpoints = await enabledEndpoints(trx, teamId);
  if (endpoints.length === 0) return;
  const type = eventTypeOf(entry);
  const body = JSON.stringify(entry);
  for (const endpoint of endpoints) {
    if (!wants(JSON.parse(endpoint.event_types) as string[], type)) continue;
    await queue(trx, endpoint.id, { auditEntryId: Number(entry.id), eventType: type, body });
  }
}

/** Queues one message at the end of an endpoint's queue (a change's, or one redelivered by hand). */
export async function queue(trx: Db, endpointId: number, message: { auditEntryId: number; eventType: string; body: string }): Promise<DeliveryRow> {
  const at = now();
  const number = await nextDeliveryNumber(trx, endpointId);
  return insertDelivery(trx, { endpoint_id: endpointId, number, audit_entry_id: message.auditEntryId, event_type: message.eventType, body: message.body, status: 'pending', created_at: at, next_attempt_at: at });
}
