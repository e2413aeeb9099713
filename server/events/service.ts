import type { components } from '../../generated/api';
import { record, type Change } from '../audit/service';
import { changingConfig } from '../storage/config-version';
import { toMicros } from '../../domain/metric';
import { BadRequest, Conflict, NotFound } from '../http/errors';
import type { PageRequest } from '../routes/pagination';
import type { Db } from '../storage/database';
import { countInTeam } from '../storage/counts';
import { now, onDuplicate } from '../storage/values';
import { requireRoomFor, type ConfigFits } from '../teams/limits';
import type { TeamRow } from '../teams/store';
import * as store from './store';

type Event = components['schemas']['Event'];
type EventCreate = components['schemas']['EventCreate'];
type EventUpdate = components['schemas']['EventUpdate'];

export async function requireEvent(db: Db, team: TeamRow, key: string): Promise<store.EventRow> {
  const event = await store.findEvent(db, team.id, key);
  if (!event) throw eventNotFound(team, key);
  return event;
}

export function eventNotFound(team: Pick<TeamRow, 'id'>, key: string): NotFound {
  return new NotFound(`No event '${key}' in team ${team.id}.`);
}

export async function listEvents(db: Db, team: TeamRow, page: PageRequest) {
  const [rows, total] = await Promise.all([store.listEvents(db, team.id, page.perPage, page.offset), countInTeam(db, 'events', team.id)]);
  return { items: rows.map(store.toEvent), total };
}

export async function getEvent(db: Db, team: TeamRow, key: string): Promise<Event> {
  return store.toEvent(await requireEvent(db, team, key));
}

export async function createEvent(db: Db, team: TeamRow, input: EventCreate, change: Change): Promise<Event> {
  const at = now();
  // In a config change for the team's lock, under which the count of its events is exact.
  const row = await changingConfig(db, team.id, async (trx) => {
    await requireRoomFor(trx, team, 'events');
    const created = await onDuplicate(
      store.insertEvent(trx, {
        team_id: team.id,
        key: input.key,
        description: input.description ?? null,
        type: input.type ?? 'unique',
        cap: checkedCap(input.cap),
        direction: input.direction ?? 'increase',
        created_at: at,
        updated_at: at,
      }),
      () => duplicateKey(team, input.key),
    );
    await record(trx, team.id, change, { resource: 'event', key: created.key, action: 'created', before: null, after: store.toEvent(created) });
    return created;
  });
  return store.toEvent(row);
}

export async function updateEvent(db: Db, team: TeamRow, key: string, input: EventUpdate, change: Change, requireConfigFits: ConfigFits): Promise<Event> {
  const cap = input.cap === undefined ? undefined : checkedCap(input.cap);
  // An event's key is the goal `event` of the experiments in the team's config.
  const row = await changingConfig(db, team.id, async (trx) => {
    const event = await requireEvent(trx, team, key);
    const changesUnit = (input.type !== undefined && (input.type === 'value') !== (event.type === 'value')) || (cap !== undefined && cap !== event.cap);
    if (changesUnit && (await store.hasConversions(trx, team.id, event.id))) {
      throw new Conflict(`Event '${key}' has stored conversions, whose sums are kept in its unit and cap: its type can change to or from 'value', and its cap, only before it has any. Create a new event instead.`);
    }
    const updated = await onDuplicate(store.updateEvent(trx, event.id, team.id, { ...input, cap, updated_at: now() }), () => duplicateKey(team, input.key ?? key));
    // The key is every running experiment's goal `event` in the config.
    if (input.key !== undefined && input.key !== key) await requireConfigFits(trx, team, '/body/key');
    await record(trx, team.id, change, { resource: 'event', key: updated.key, action: 'updated', before: store.toEvent(event), after: store.toEvent(updated) });
    return updated;
  });
  return store.toEvent(row);
}

/** A cap has at most six decimals, like the values it bounds (the schema checks its range). */
function checkedCap(cap: number | null | undefined): number | null {
  if (cap === undefined || cap === null) return null;
  if (toMicros(cap) === null) throw new BadRequest('cap may have at most 6 decimals.', [{ path: '/body/cap', message: 'must have at most 6 decimals' }]);
  return cap;
}

export async function deleteEvent(db: Db, team: TeamRow, key: string, change: Change): Promise<Event> {
  // Ingest keeps the events it looked up while the config version stands.
  return changingConfig(db, team.id, async (trx) => {
    const event = await requireEvent(trx, team, key);
    const goalOf = await store.experimentKeysWithGoal(trx, team.id, event.id);
    if (goalOf.length > 0) {
      throw new Conflict(`Event '${key}' is the goal of experiment(s) ${goalOf.map((k) => `'${k}'`).join(', ')}; change their goal or delete them first.`);
    }
    await store.deleteEvent(trx, event.id, team.id);
    await record(trx, team.id, change, { resource: 'event', key: event.key, action: 'deleted', before: store.toEvent(event), after: null });
    return store.toEvent(event);
  });
}

function duplicateKey(team: TeamRow, key: string): Conflict {
  return new Conflict(`Team ${team.id} already has an event '${key}'.`);
}
