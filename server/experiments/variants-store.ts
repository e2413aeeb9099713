import { PostgresAdapter, sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import { jsonArrayFrom as postgresJsonArray } from 'kysely/helpers/postgres';
import { jsonArrayFrom as sqliteJsonArray } from 'kysely/helpers/sqlite';
import type { components } from '../../generated/api';
import { resolveTraffic } from '../../domain/assignment';
import { listRunningExperiments, selectExperiments, type ExperimentRow } from './store';
import type { EventRow } from '../events/store';
import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';
import type { Database } from '../storage/schema';
import { iso } from '../storage/values';

type Variant = components['schemas']['Variant'];
export type VariantRow = Selectable<Database['variants']>;
/** A variant with its resolved share, as assignment and responses see it. */
export type ResolvedVariant = VariantRow & { share: number };

/** The variants of one experiment in creation order, each with its resolved share. */
export function resolveShares(rows: VariantRow[]): ResolvedVariant[] {
  const shares = resolveTraffic(rows.map((row) => row.traffic));
  return rows.map((row, i) => ({ ...row, share: shares[i] }));
}

export function toVariant(row: ResolvedVariant): Variant {
  return {
    key: row.key,
    description: row.description,
    control: Boolean(row.control),
    traffic: row.share,
    traffic_auto: row.traffic === null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function variantsOf(db: Db, teamId: number, experimentId: number): Promise<ResolvedVariant[]> {
  return resolveShares(await variantsInOrder(db, { teamId, experimentId }));
}

const variantsInOrder = prepared((db, arg: Bind<{ teamId: number; experimentId: number }>) =>
  db
    .selectFrom('variants')
    .selectAll()
    .where('team_id', '=', arg((a) => a.teamId))
    .where('experiment_id', '=', arg((a) => a.experimentId))
    .orderBy('id'),
);

/** Variants of several experiments, grouped by experiment id, each group resolved. */
export async function variantsOfMany(db: Db, teamId: number, experimentIds: number[]): Promise<Map<number, ResolvedVariant[]>> {
  const groups = new Map<number, VariantRow[]>(experimentIds.map((id) => [id, []]));
  if (experimentIds.length > 0) {
    const rows = await db
      .selectFrom('variants')
      .selectAll()
      .where('team_id', '=', teamId)
      .where('experiment_id', 'in', experimentIds)
      .orderBy('id')
      .execute();
    for (const row of rows) groups.get(row.experiment_id)?.push(row);
  }
  return new Map([...groups].map(([id, rows]) => [id, resolveShares(rows)]));
}

/** The team's running experiments, in creation order, and the variants of each by experiment id. */
export async function runningWithVariants(db: Db, teamId: number): Promise<{ running: ExperimentRow[]; variants: Map<number, ResolvedVariant[]> }> {
  const running = await listRunningExperiments(db, teamId);
  return { running, variants: await variantsOfMany(db, teamId, running.map((experiment) => experiment.id)) };
}

export async function insertVariant(db: Db, row: Insertable<Database['variants']>): Promise<void> {
  await db.insertInto('variants').values(row).execute();
}

export async function updateVariant(db: Db, id: number, teamId: number, changes: Updateable<Database['variants']>): Promise<void> {
  await db.updateTable('variants').set(changes).where('id', '=', id).where('team_id', '=', teamId).execute();
}

export async function deleteVariant(db: Db, id: number, teamId: number): Promise<void> {
  await db.deleteFrom('variants').where('id', '=', id).where('team_id', '=', teamId).execute();
}

export async function eventCountsOf(db: Db, teamId: number, variantIds: number[]) {
  if (variantIds.length === 0) return [];
  return countsOfVariants(db, { teamId, variantIds }, variantIds.length);
}

const countsOfVariants = prepared((db, arg: Bind<{ teamId: number; variantIds: number[] }>, variants: number) =>
  db
    .selectFrom('variant_event_counts')
    .select(['variant_id', 'event_id', 'conversions', 'unique_conversions', 'sum_y', 'sum_y2', 'sum_x', 'sum_x2', 'sum_xy'])
    .where('team_id', '=', arg((a) => a.teamId))
    .where(
      'variant_id',
      'in',
      Array.from({ length: variants }, (_, i) => arg((a) => a.variantIds[i]!)),
    ),
);

/** What a statistics read needs, read together. */
export interface StatisticsInputs {
  experiment: ExperimentRow;
  variants: ResolvedVariant[];
  events: Array<Pick<EventRow, 'id' | 'key' | 'type' | 'cap' | 'direction'>>;
  /** The counters of the named variant and of the control. */
  counts: Array<{ variant_id: number; event_id: number; conversions: number; unique_conversions: number } & Record<'sum_y' | 'sum_y2' | 'sum_x' | 'sum_x2' | 'sum_xy', string | number>>;
}

/**
 * The experiment, its variants, the team's events by key and the counters of the variant and
 * the control, in one statement: one snapshot on either engine without a transaction, and on
 * PostgreSQL one round trip instead of six (begin, four queries, commit). Undefined when the
 * team has no such experiment.
 */
export async function statisticsInputs(db: Db, teamId: number, experimentKey: string, variantKey: string): Promise<StatisticsInputs | undefined> {
  const [row] = await experimentWithCounters(db, { teamId, experimentKey, variantKey });
  if (!row) return undefined;
  const { variants, events, counts, ...experiment } = row;
  const parsed = <T>(value: T[] | string): T[] => (typeof value === 'string' ? (JSON.parse(value) as T[]) : value);
  return { experiment, variants: resolveShares(parsed(variants)), events: parsed(events), counts: parsed(counts) };
}

const experimentWithCounters = prepared((db, arg: Bind<{ teamId: number; experimentKey: string; variantKey: string }>) => {
  const jsonArrayFrom = db.getExecutor().adapter instanceof PostgresAdapter ? postgresJsonArray : sqliteJsonArray;
  return selectExperiments(db, arg((a) => a.teamId))
    .select((eb) => [
      jsonArrayFrom(
        eb
          .selectFrom('variants as v')
          .select(['v.id', 'v.team_id', 'v.experiment_id', 'v.key', 'v.description', 'v.control', 'v.traffic', 'v.participants', 'v.created_at', 'v.updated_at'])
          .whereRef('v.experiment_id', '=', 'experiments.id')
          .orderBy('v.id'),
      ).as('variants'),
      jsonArrayFrom(eb.selectFrom('events as e').select(['e.id', 'e.key', 'e.type', 'e.cap', 'e.direction']).whereRef('e.team_id', '=', 'experiments.team_id').orderBy('e.key')).as('events'),
      jsonArrayFrom(
        eb
          .selectFrom('variant_event_counts as c')
          .innerJoin('variants as cv', 'cv.id', 'c.variant_id')
          // The exact sums as text: PostgreSQL's JSON would carry them as numbers, rounded to doubles when parsed.
          .select([
            'c.variant_id',
            'c.event_id',
            'c.conversions',
            'c.unique_conversions',
            sql<string>`cast(c.sum_y as text)`.as('sum_y'),
            sql<string>`cast(c.sum_y2 as text)`.as('sum_y2'),
            sql<string>`cast(c.sum_x as text)`.as('sum_x'),
            sql<string>`cast(c.sum_x2 as text)`.as('sum_x2'),
            sql<string>`cast(c.sum_xy as text)`.as('sum_xy'),
          ])
          .whereRef('cv.experiment_id', '=', 'experiments.id')
          .whereRef('c.team_id', '=', 'experiments.team_id')
          .where((w) => w.or([w('cv.key', '=', arg((a) => a.variantKey)), w('cv.control', '=', true)])),
      ).as('counts'),
    ])
    .where('experiments.key', '=', arg((a) => a.experimentKey));
});
