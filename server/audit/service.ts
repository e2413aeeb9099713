import type { Logger } from 'pino';
import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import { iso, now } from '../storage/values';
import { enqueueDeliveries } from '../webhooks/outbox';
import * as store from './store';

type AuditEntry = components['schemas']['AuditEntry'];
export type ResourceType = components['schemas']['AuditResourceType'];
export type Action = AuditEntry['action'];

/** Who makes a change: a user (from its API token), the admin CLI, or the service itself, with its reason. */
export type Actor = { type: 'user'; userId: number } | { type: 'admin-cli' } | { type: 'service'; reason: string };

/** What every change carries to its audit entry: who makes it, and the API request it is made in. */
export interface Change {
  actor: Actor;
  requestId: string | null;
}

export const ADMIN_CLI: Change = { actor: { type: 'admin-cli' }, requestId: null };

export interface Changed {
  resource: ResourceType;
  key: string;
  action: Action;
  /** The resource as answered before and after the change; null where it did not exist. */
  before: object | null;
  after: object | null;
}

/**
 * Writes the change's entry, in the change's own transaction `trx`: the two commit or roll back
 * together. For an update, only the fields whose value changed are kept (updated_at aside), and
 * an update that changed none writes nothing. The entry is queued, in the same transaction, for
 * the team's webhook endpoints that want it.
 */
export async function record(trx: Db, teamId: number, change: Change, changed: Changed): Promise<void> {
  let { before, after } = changed;
  if (changed.action === 'updated' && before && after) {
    [before, after] = changedFields(before as Record<string, unknown>, after as Record<string, unknown>);
    if (Object.keys(after).length === 0) return;
  }
  const { actor } = change;
  const email = actor.type === 'user' ? await emailOf(trx, actor.userId) : null;
  const row = await store.insertEntry(trx, {
    team_id: teamId,
    at: now(),
    actor_type: actor.type,
    actor_user_id: actor.type === 'user' ? actor.userId : null,
    actor_email: email,
    actor_reason: actor.type === 'service' ? actor.reason : null,
    resource_type: changed.resource,
    resource_key: changed.key,
    action: changed.action,
    before: before === null ? null : JSON.stringify(before),
    after: after === null ? null : JSON.stringify(after),
    request_id: change.requestId,
  });
  await enqueueDeliveries(trx, teamId, toEntry(row));
}

/** The same entry in each of the teams (a user's API token reaches all of the user's teams). */
export async function recordInTeams(trx: Db, teamIds: number[], change: Change, changed: Changed): Promise<void> {
  for (const teamId of teamIds) await record(trx, teamId, change, changed);
}

function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): [Record<string, unknown>, Record<string, unknown>] {
  const old: Record<string, unknown> = {};
  const next: Record<string, unknown> = {};
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (field === 'updated_at' || JSON.stringify(before[field]) === JSON.stringify(after[field])) continue;
    old[field] = before[field] ?? null;
    next[field] = after[field] ?? null;
  }
  return [old, next];
}

async function emailOf(trx: Db, userId: number): Promise<string | null> {
  const user = await trx.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst();
  return user?.email ?? null;
}

export interface AuditQuery {
  cursor?: number;
  limit: number;
  resourceType?: ResourceType;
  resourceKey?: string;
  actor?: string;
  since?: string;
  until?: string;
}

/** One page of the team's entries, newest first, and the cursor of the next page (null on the last). */
export async function listAuditLog(db: Db, teamId: number, query: AuditQuery): Promise<{ entries: AuditEntry[]; nextCursor: string | null }> {
  const actor = query.actor;
  const rows = await store.listEntries(
    db,
    teamId,
    {
      below: query.cursor,
      resourceType: query.resourceType,
      resourceKey: query.resourceKey,
      ...(actor === 'admin-cli' || actor === 'service' ? { actorType: actor } : actor !== undefined ? { actorType: 'user', actorEmail: actor } : {}),
      since: query.since,
      until: query.until,
    },
    query.limit + 1,
  );
  const page = rows.slice(0, query.limit);
  return { entries: page.map(toEntry), nextCursor: rows.length > query.limit ? String(page.at(-1)!.id) : null };
}

export function toEntry(row: store.AuditRow): AuditEntry {
  return {
    id: String(row.id),
    at: iso(row.at),
    actor: { type: row.actor_type, user_id: row.actor_user_id, email: row.actor_email, reason: row.actor_reason },
    resource_type: row.resource_type as ResourceType,
    resource_key: row.resource_key,
    action: row.action as Action,
    before: row.before === null ? null : (JSON.parse(row.before) as AuditEntry['before']),
    after: row.after === null ? null : (JSON.parse(row.after) as AuditEntry['after']),
    request_id: row.request_id,
  };
}

/** Deletes the entries older than `retentionDays` (AUDIT_LOG_RETENTION_DAYS, at least 90); answers how many. */
export async function sweepAuditLog(db: Db, retentionDays: number): Promise<number> {
  const cutoff = new Date(Date.parse(now()) - retentionDays * 86_400_000).toISOString();
  return store.deleteOlderThan(db, cutoff);
}

const SWEEP_EVERY_MS = 3_600_000;

/** Sweeps the audit log at start-up and then hourly; answers how to stop. */
export function sweepAuditLogEvery(db: Db, retentionDays: number, logger: Logger): () => void {
  const sweep = () => {
    sweepAuditLog(db, retentionDays)
      .then((removed) => {
        if (removed > 0) logger.info({ removed, retentionDays }, 'audit entries past their retention removed');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'sweeping the audit log failed; the next sweep tries again'));
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
