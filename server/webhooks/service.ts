import type { components } from '../../generated/api';
import { record, type Change } from '../audit/service';
import { BadRequest, Conflict, LimitReached, NotFound } from '../http/errors';
import type { Db } from '../storage/schema';
import { teamWrite } from '../storage/team-lock';
import { iso, isoOrNull, now, onDuplicate } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { checkUrl, RefusedUrl } from './addresses';
import * as deliveries from './deliveries-store';
import * as endpoints from './endpoints-store';
import { queue } from './outbox';
import { newSecret } from './signature';

type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
type WebhookEndpointWithSecret = components['schemas']['WebhookEndpointWithSecret'];
type WebhookEndpointCreate = components['schemas']['WebhookEndpointCreate'];
type WebhookEndpointUpdate = components['schemas']['WebhookEndpointUpdate'];
type WebhookDelivery = components['schemas']['WebhookDelivery'];

/** The most webhook endpoints a team may have (the contract's Limits). */
export const ENDPOINTS_PER_TEAM = 20;

export function toEndpoint(row: endpoints.EndpointRow): WebhookEndpoint {
  return {
    key: row.key,
    url: row.url,
    event_types: JSON.parse(row.event_types) as WebhookEndpoint['event_types'],
    enabled: Boolean(row.enabled),
    description: row.description,
    disabled_reason: row.disabled_reason,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function toDelivery(row: deliveries.DeliveryRow): WebhookDelivery {
  return {
    number: row.number,
    message_id: `msg_${row.audit_entry_id}`,
    event_type: row.event_type,
    audit_entry_id: String(row.audit_entry_id),
    status: row.status,
    attempts: row.attempts,
    last_status: row.last_status,
    last_error: row.last_error,
    last_attempt_at: isoOrNull(row.last_attempt_at),
    next_attempt_at: row.status === 'pending' ? isoOrNull(row.next_attempt_at) : null,
    created_at: iso(row.created_at),
    delivered_at: isoOrNull(row.delivered_at),
  };
}

async function requireEndpoint(db: Db, team: TeamRow, key: string): Promise<endpoints.EndpointRow> {
  const endpoint = await endpoints.findEndpoint(db, team.id, key);
  if (!endpoint) throw new NotFound(`No webhook endpoint '${key}' in team ${team.id}.`);
  return endpoint;
}

/** 400 naming /body/url when the URL may not receive webhooks (WebhookUrl's rules). */
async function requireDeliverable(url: string, allowPrivate: boolean): Promise<void> {
  try {
    await checkUrl(url, allowPrivate);
  } catch (error) {
    if (!(error instanceof RefusedUrl)) throw error;
    throw new BadRequest(`The url ${url} ${error.message}; webhooks are delivered only to public addresses over http(s).`, [{ path: '/body/url', message: error.message }]);
  }
}

export async function listEndpoints(db: Db, team: TeamRow): Promise<WebhookEndpoint[]> {
  return (await endpoints.listEndpoints(db, team.id)).map(toEndpoint);
}

export async function getEndpoint(db: Db, team: TeamRow, key: string): Promise<WebhookEndpoint> {
  return toEndpoint(await requireEndpoint(db, team, key));
}

export async function createEndpoint(db: Db, team: TeamRow, input: WebhookEndpointCreate, change: Change, allowPrivate: boolean): Promise<WebhookEndpointWithSecret> {
  await requireDeliverable(input.url, allowPrivate);
  const secret = newSecret();
  const at = now();
  const created = await teamWrite(db, team.id, async (trx) => {
    const held = await endpoints.countEndpoints(trx, team.id);
    if (held >= ENDPOINTS_PER_TEAM) {
      throw new LimitReached(`Team ${team.id} has ${held} webhook endpoints, the most a team may have (${ENDPOINTS_PER_TEAM}); delete some first.`, [
        { path: '/body/url', message: `team ${team.id} already has ${held} webhook endpoints` },
      ]);
    }
    const row = await onDuplicate(endpoints.insertEndpoint(trx, {
      team_id: team.id,
      key: input.key,
      url: input.url,
      event_types: JSON.stringify(input.event_types),
      enabled: input.enabled ?? true,
      description: input.description ?? null,
      disabled_reason: null,
      secret,
      created_at: at,
      updated_at: at,
    }), () => new Conflict(`Team ${team.id} already has a webhook endpoint '${input.key}'.`));
    await record(trx, team.id, change, { resource: 'webhook', key: row.key, action: 'created', before: null, after: toEndpoint(row) });
    return row;
  });
  return { ...toEndpoint(created), secret };
}

export async function updateEndpoint(db: Db, team: TeamRow, key: string, input: WebhookEndpointUpdate, change: Change, allowPrivate: boolean): Promise<WebhookEndpoint> {
  if (input.url !== undefined) await requireDeliverable(input.url, allowPrivate);
  const updated = await teamWrite(db, team.id, async (trx) => {
    const endpoint = await requireEndpoint(trx, team, key);
    const row = await endpoints.updateEndpoint(trx, endpoint.id, {
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.event_types !== undefined ? { event_types: JSON.stringify(input.event_types) } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.enabled === true ? { disabled_reason: null } : {}),
      updated_at: now(),
    });
    await record(trx, team.id, change, { resource: 'webhook', key, action: 'updated', before: toEndpoint(endpoint), after: toEndpoint(row) });
    return row;
  });
  return toEndpoint(updated);
}

export async function deleteEndpoint(db: Db, team: TeamRow, key: string, change: Change): Promise<WebhookEndpoint> {
  const deleted = await teamWrite(db, team.id, async (trx) => {
    const endpoint = await requireEndpoint(trx, team, key);
    await endpoints.deleteEndpoint(trx, endpoint.id);
    await record(trx, team.id, change, { resource: 'webhook', key, action: 'deleted', before: toEndpoint(endpoint), after: null });
    return endpoint;
  });
  return toEndpoint(deleted);
}

/** A new secret for the endpoint; the one it replaces still signs deliveries, beside it, for `overlapMs` (none when 0). */
export async function rotateSecret(db: Db, team: TeamRow, key: string, change: Change, overlapMs: number): Promise<WebhookEndpointWithSecret> {
  const secret = newSecret();
  const rotated = await teamWrite(db, team.id, async (trx) => {
    const endpoint = await requireEndpoint(trx, team, key);
    const previous = overlapMs > 0 ? { previous_secret: endpoint.secret, previous_secret_until: new Date(Date.now() + overlapMs).toISOString() } : { previous_secret: null, previous_secret_until: null };
    const row = await endpoints.updateEndpoint(trx, endpoint.id, { secret, ...previous, updated_at: now() });
    await record(trx, team.id, change, { resource: 'webhook', key, action: 'issued', before: null, after: { key, secret_rotated: true } });
    return row;
  });
  return { ...toEndpoint(rotated), secret };
}

export async function listDeliveries(db: Db, team: TeamRow, key: string, limit: number): Promise<WebhookDelivery[]> {
  const endpoint = await requireEndpoint(db, team, key);
  return (await deliveries.listDeliveries(db, endpoint.id, limit)).map(toDelivery);
}

/** Queues a delivery's message again at the end of its endpoint's queue. */
export async function redeliver(db: Db, team: TeamRow, key: string, number: number): Promise<WebhookDelivery> {
  const endpoint = await requireEndpoint(db, team, key);
  const delivery = await deliveries.findDelivery(db, endpoint.id, number);
  if (!delivery) throw new NotFound(`No delivery ${number} of webhook endpoint '${key}' in team ${team.id}.`);
  const queued = await teamWrite(db, team.id, (trx) => queue(trx, endpoint.id, { auditEntryId: delivery.audit_entry_id, eventType: delivery.event_type, body: delivery.body }));
  return toDelivery(queued);
}
