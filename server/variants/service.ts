import type { components } from '../../generated/api';
import { record, type Change } from '../audit/service';
import { changingConfig } from '../storage/config-version';
import { lockedExperiment, requireExperiment } from '../experiments/service';
import type { ExperimentRow } from '../experiments/store';
import { Conflict, LimitReached, NotFound } from '../http/errors';
import { TEAM_LIMITS } from '../teams/limits';
import type { PageRequest } from '../routes/pagination';
import type { Db } from '../storage/database';
import { now, onDuplicate } from '../storage/values';
import type { TeamRow } from '../teams/store';
import * as store from '../experiments/variants-store';

type Variant = components['schemas']['Variant'];
type VariantCreate = components['schemas']['VariantCreate'];
type VariantUpdate = components['schemas']['VariantUpdate'];


export function requireVariant(variants: store.ResolvedVariant[], experiment: ExperimentRow, key: string): store.ResolvedVariant {
  const variant = variants.find((candidate) => candidate.key === key);
  if (!variant) throw new NotFound(`No variant '${key}' in experiment '${experiment.key}'.`);
  return variant;
}

export async function listVariants(db: Db, team: TeamRow, experimentKey: string, page: PageRequest) {
  const experiment = await requireExperiment(db, team, experimentKey);
  const variants = await store.variantsOf(db, team.id, experiment.id);
  return { items: variants.slice(page.offset, page.offset + page.perPage).map(store.toVariant), total: variants.length };
}

export async function getVariant(db: Db, team: TeamRow, experimentKey: string, key: string): Promise<Variant> {
  const experiment = await requireExperiment(db, team, experimentKey);
  return store.toVariant(requireVariant(await store.variantsOf(db, team.id, experiment.id), experiment, key));
}

export async function createVariant(db: Db, team: TeamRow, experimentKey: string, input: VariantCreate, change: Change): Promise<Variant> {
  return changingConfig(db, team.id, async (trx) => {
    const { experiment, variants } = await draftWithVariants(trx, team, experimentKey);
    const most = TEAM_LIMITS.variantsPerExperiment;
    if (variants.length >= most) throw new LimitReached(`Experiment '${experiment.key}' has ${variants.length} variants, the most an experiment may have (${most}).`);
    const candidate = { key: input.key, control: input.control ?? false, traffic: input.traffic ?? null };
    checkAgainstOthers(experiment, variants, candidate);
    const at = now();
    await onDuplicate(
      store.insertVariant(trx, {
        team_id: team.id,
        experiment_id: experiment.id,
        key: input.key,
        description: input.description ?? null,
        control: candidate.control,
        traffic: candidate.traffic,
        created_at: at,
        updated_at: at,
      }),
      () => duplicateKey(experiment, input.key),
    );
    const created = store.toVariant(requireVariant(await store.variantsOf(trx, team.id, experiment.id), experiment, input.key));
    await record(trx, team.id, change, { resource: 'variant', key: `${experiment.key}/${created.key}`, action: 'created', before: null, after: created });
    return created;
  });
}

export async function updateVariant(db: Db, team: TeamRow, experimentKey: string, key: string, input: VariantUpdate, change: Change): Promise<Variant> {
  return changingConfig(db, team.id, async (trx) => {
    const { experiment, variants } = await draftWithVariants(trx, team, experimentKey);
    const variant = requireVariant(variants, experiment, key);
    const others = variants.filter((other) => other.id !== variant.id);
    const candidate = {
      key: input.key ?? variant.key,
      control: input.control ?? Boolean(variant.control),
      traffic: input.traffic === undefined ? variant.traffic : input.traffic,
    };
    checkAgainstOthers(experiment, others, candidate);
    await onDuplicate(
      store.updateVariant(trx, variant.id, team.id, {
        key: input.key,
        description: input.description,
        control: input.control,
        traffic: input.traffic,
        updated_at: now(),
      }),
      () => duplicateKey(experiment, candidate.key),
    );
    const updated = store.toVariant(requireVariant(await store.variantsOf(trx, team.id, experiment.id), experiment, candidate.key));
    await record(trx, team.id, change, { resource: 'variant', key: `${experiment.key}/${updated.key}`, action: 'updated', before: store.toVariant(variant), after: updated });
    return updated;
  });
}

export async function deleteVariant(db: Db, team: TeamRow, experimentKey: string, key: string, change: Change): Promise<Variant> {
  return changingConfig(db, team.id, async (trx) => {
    const { experiment, variants } = await draftWithVariants(trx, team, experimentKey);
    const variant = requireVariant(variants, experiment, key);
    await store.deleteVariant(trx, variant.id, team.id);
    await record(trx, team.id, change, { resource: 'variant', key: `${experiment.key}/${variant.key}`, action: 'deleted', before: store.toVariant(variant), after: null });
    return store.toVariant(variant);
  });
}

/** Variants change only in draft: changing weights mid-run would bias the results. */
async function draftWithVariants(trx: Db, team: TeamRow, experimentKey: string) {
  const experiment = await lockedExperiment(trx, team, experimentKey);
  if (experiment.status !== 'draft') {
    throw new Conflict(`Experiment '${experiment.key}' is ${experiment.status}; variants can only change while it is a draft.`);
  }
  return { experiment, variants: await store.variantsOf(trx, team.id, experiment.id) };
}

function checkAgainstOthers(
  experiment: ExperimentRow,
  others: store.ResolvedVariant[],
  candidate: { key: string; control: boolean; traffic: number | null },
): void {
  const control = others.find((other) => Boolean(other.control));
  if (candidate.control && control) {
    throw new Conflict(`Experiment '${experiment.key}' already has a control variant, '${control.key}'.`);
  }
  const setShares = others.reduce((sum, other) => sum + (other.traffic ?? 0), candidate.traffic ?? 0);
  if (setShares > 100) throw new Conflict(`The variants' set traffic shares would sum to ${setShares}, above 100.`);
}

function duplicateKey(experiment: ExperimentRow, key: string): Conflict {
  return new Conflict(`Experiment '${experiment.key}' already has a variant '${key}'.`);
}
