import type { Insertable, Selectable, Updateable } from 'kysely';
import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import type { Database } from '../storage/schema';
import { iso } from '../storage/values';

type Rollout = components['schemas']['Rollout'];
type ConfigRollout = components['schemas']['ConfigRollout'];
export type RolloutRow = Selectable<Database['rollouts']>;
export type RolloutState = RolloutRow['state'];

/** The states a rollout is served in (carried in the team config); at most one per flag. */
export const ACTIVE_STATES: RolloutState[] = ['running', 'paused'];

/** The rollout as answered, with what its counters say now (counters.ts). */
export function toRollout(row: RolloutRow, feature: string, observed: Pick<Rollout, 'exposures' | 'readings'>): Rollout {
  const steps = JSON.parse(row.steps) as Rollout['steps'];
  return {
    number: row.number,
    feature,
    state: row.state,
    value: row.value,
    conditions: JSON.parse(row.conditions) as Rollout['conditions'],
    guardrails: JSON.parse(row.guardrails) as Rollout['guardrails'],
    steps,
    significance: Number(row.significance),
    step: row.step,
    share: shareOf(row),
    seed: row.seed,
    history: JSON.parse(row.history) as Rollout['history'],
    rollback: row.rollback === null ? null : (JSON.parse(row.rollback) as Rollout['rollback']),
    ...observed,
    hold: row.hold === null ? null : (JSON.parse(row.hold) as Rollout['hold']),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The share the rollout serves: its current step's percentage. */
export function shareOf(row: Pick<RolloutRow, 'steps' | 'step'>): number {
  return (JSON.parse(row.steps) as Rollout['steps'])[row.step]!.percentage;
}

/** What the team config carries of a running or paused rollout. */
export function toConfigRollout(row: RolloutRow): ConfigRollout {
  const conditions = JSON.parse(row.conditions) as ConfigRollout['conditions'];
  const hasConditions = conditions !== undefined && Object.keys(conditions).length > 0;
  return { number: row.number, seed: row.seed, share: shareOf(row), value: row.value, ...(hasConditions && { conditions }) };
}

export async function listRollouts(db: Db, featureId: number): Promise<RolloutRow[]> {
  return db.selectFrom('rollouts').selectAll().where('feature_id', '=', featureId).orderBy('number').execute();
}

export async function findRollout(db: Db, featureId: number, number: number): Promise<RolloutRow | undefined> {
  return db.selectFrom('rollouts').selectAll().where('feature_id', '=', featureId).where('number', '=', number).executeTakeFirst();
}

export async function activeRollout(db: Db, featureId: number): Promise<RolloutRow | undefined> {
  return db.selectFrom('rollouts').selectAll().where('feature_id', '=', featureId).where('state', 'in', ACTIVE_STATES).executeTakeFirst();
}

/** The running or paused rollouts of a team's flags, by the flag's id: what its config carries. */
export async function activeRolloutsOfTeam(db: Db, teamId: number): Promise<Map<number, RolloutRow>> {
  const rows = await db.selectFrom('rollouts').selectAll().where('team_id', '=', teamId).where('state', 'in', ACTIVE_STATES).execute();
  return new Map(rows.map((row) => [row.feature_id, row]));
}

/** A running or paused rollout as the ingest reads it: whom it places in which arm, and the guardrail events its arms count. */
export interface IngestRollout {
  id: number;
  feature: string;
  number: number;
  seed: string;
  share: number;
  /** Its guardrail events' ids. */
  guardrails: Set<number>;
}

/** The team's running and paused rollouts, by `<feature>/<number>`. */
export async function ingestRollouts(db: Db, teamId: number): Promise<Map<string, IngestRollout>> {
  const rows = await db
    .selectFrom('rollouts')
    .innerJoin('features', 'features.id', 'rollouts.feature_id')
    .select(['rollouts.id', 'features.key as feature', 'rollouts.number', 'rollouts.seed', 'rollouts.steps', 'rollouts.step', 'rollouts.guardrails'])
    .where('rollouts.team_id', '=', teamId)
    .where('rollouts.state', 'in', ACTIVE_STATES)
    .execute();
  const keys = rows.flatMap((row) => (JSON.parse(row.guardrails) as Rollout['guardrails']).map((guardrail) => guardrail.event));
  const events = keys.length === 0 ? [] : await db.selectFrom('events').select(['id', 'key']).where('team_id', '=', teamId).where('key', 'in', keys).execute();
  const eventIds = new Map(events.map((event) => [event.key, event.id]));
  return new Map(
    rows.map((row) => {
      const guardrails = (JSON.parse(row.guardrails) as Rollout['guardrails']).flatMap((guardrail) => eventIds.get(guardrail.event) ?? []);
      return [`${row.feature}/${row.number}`, { id: row.id, feature: row.feature, number: row.number, seed: row.seed, share: shareOf(row), guardrails: new Set(guardrails) }];
    }),
  );
}

/** A flag's rollout by the flag's key and the rollout's number, in any state. */
export async function findRolloutOfFlag(db: Db, teamId: number, feature: string, number: number): Promise<RolloutRow | undefined> {
  return db
    .selectFrom('rollouts')
    .innerJoin('features', 'features.id', 'rollouts.feature_id')
    .selectAll('rollouts')
    .where('features.team_id', '=', teamId)
    .where('features.key', '=', feature)
    .where('rollouts.number', '=', number)
    .executeTakeFirst();
}

/** The ids of every running or paused rollout, of every team: what a check looks at. */
export async function activeRolloutIds(db: Db): Promise<Array<{ id: number }>> {
  return db.selectFrom('rollouts').select('id').where('state', 'in', ACTIVE_STATES).orderBy('id').execute();
}

export async function findRolloutById(db: Db, id: number): Promise<RolloutRow | undefined> {
  return db.selectFrom('rollouts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function featureOfRollout(db: Db, rollout: Pick<RolloutRow, 'feature_id' | 'team_id'>): Promise<Selectable<Database['features']> | undefined> {
  return db.selectFrom('features').selectAll().where('id', '=', rollout.feature_id).where('team_id', '=', rollout.team_id).executeTakeFirst();
}

export async function nextNumber(db: Db, featureId: number): Promise<number> {
  const row = await db.selectFrom('rollouts').select((eb) => eb.fn.max('number').as('highest')).where('feature_id', '=', featureId).executeTakeFirst();
  return Number(row?.highest ?? 0) + 1;
}

export async function insertRollout(db: Db, row: Insertable<Database['rollouts']>): Promise<RolloutRow> {
  return db.insertInto('rollouts').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The changed row, or undefined when it was no longer in one of the `from` states. */
export async function updateRollout(db: Db, id: number, from: RolloutState[], changes: Updateable<Database['rollouts']>): Promise<RolloutRow | undefined> {
  return db.updateTable('rollouts').set(changes).where('id', '=', id).where('state', 'in', from).returningAll().executeTakeFirst();
}
