import type { Insertable, Selectable, Updateable } from 'kysely';
import type { components } from '../../generated/api';
import { resolveTraffic } from '../domain/assignment';
import { listRunningExperiments, type ExperimentRow } from '../experiments/store';
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
    .select(['variant_id', 'event_id', 'conversions', 'unique_conversions'])
    .where('team_id', '=', arg((a) => a.teamId))
    .where(
      'variant_id',
      'in',
      Array.from({ length: variants }, (_, i) => arg((a) => a.variantIds[i]!)),
    ),
);
