import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api';
import { record, type Change } from '../audit/service';
import { changingConfig } from '../storage/config-version';
import { CURRENT_HASH_VERSION } from '../../domain/assignment';
import { rangesOverlap } from '../../domain/exclusion-groups';
import { DEFAULT_WINDOW_DAYS } from '../../domain/pre-exposure';
import { requireEvent } from '../events/service';
import { findEvent as findEventOf } from '../events/store';
import { BadRequest, Conflict, NotFound } from '../http/errors';
import type { PageRequest } from '../routes/pagination';
import type { Db } from '../storage/database';
import { countInTeam } from '../storage/counts';
import { now, onDuplicate } from '../storage/values';
import { largestField, requireRoomFor, requireRoomToRun, type ConfigFits } from '../teams/limits';
import type { TeamRow } from '../teams/store';
import { toVariant, variantsOf, variantsOfMany } from './variants-store';
import * as store from './store';
import { groupRangeOf, targetingColumns } from './targeting';

type Experiment = components['schemas']['Experiment'];
type ExperimentCreate = components['schemas']['ExperimentCreate'];
type ExperimentUpdate = components['schemas']['ExperimentUpdate'];

export async function requireExperiment(db: Db, team: TeamRow, key: string): Promise<store.ExperimentRow> {
  const experiment = await store.findExperiment(db, team.id, key);
  if (!experiment) throw experimentNotFound(team, key);
  return experiment;
}

export function experimentNotFound(team: TeamRow, key: string): NotFound {
  return new NotFound(`No experiment '${key}' in team ${team.id}.`);
}

/** The experiment, locked for the rest of the transaction. */
export async function lockedExperiment(trx: Db, team: TeamRow, key: string): Promise<store.ExperimentRow> {
  const experiment = await requireExperiment(trx, team, key);
  await store.lockExperiment(trx, experiment.id, team.id);
  return store.findExperimentById(trx, team.id, experiment.id);
}

export async function listExperiments(db: Db, team: TeamRow, page: PageRequest, include: string[] = []) {
  const [rows, total] = await Promise.all([
    store.listExperiments(db, team.id, page.perPage, page.offset),
    countInTeam(db, 'experiments', team.id),
  ]);
  return { items: await describeExperiments(db, team, rows, include), total };
}

export async function getExperiment(db: Db, team: TeamRow, key: string, include: string[] = []): Promise<Experiment> {
  const [experiment] = await describeExperiments(db, team, [await requireExperiment(db, team, key)], include);
  return experiment!;
}

/** Experiments as answered; with `include=variants`, each with its variants. */
export async function describeExperiments(db: Db, team: TeamRow, rows: store.ExperimentRow[], include: string[]): Promise<Experiment[]> {
  if (!include.includes('variants')) return rows.map(store.toExperiment);
  const variants = await variantsOfMany(db, team.id, rows.map((row) => row.id));
  return rows.map((row) => ({ ...store.toExperiment(row), variants: (variants.get(row.id) ?? []).map(toVariant) }));
}

export async function createExperiment(db: Db, team: TeamRow, input: ExperimentCreate, change: Change): Promise<Experiment> {
  const targeting = targetingColumns(input);
  const goal = await requireEvent(db, team, input.event);
  const guardrails = await guardrailIds(db, team, input.guardrails ?? [], goal.id);
  const at = now();
  const id = await changingConfig(db, team.id, async (trx) => {
    await requireRoomFor(trx, team, 'experiments');
    const inserted = await onDuplicate(
      store.insertExperiment(trx, {
        team_id: team.id,
        key: input.key,
        description: input.description ?? null,
        status: 'draft',
        event_id: goal.id,
        seed: randomBytes(16).toString('hex'),
        hash_version: CURRENT_HASH_VERSION,
        minimum_effect: input.minimum_effect ?? null,
        pre_exposure_days: input.pre_exposure_days ?? DEFAULT_WINDOW_DAYS,
        ...targeting,
        created_at: at,
        updated_at: at,
        started_at: null,
        stopped_at: null,
      }),
      () => duplicateKey(team, input.key),
    );
    await store.replaceGuardrails(trx, team.id, inserted, guardrails);
    await record(trx, team.id, change, { resource: 'experiment', key: input.key, action: 'created', before: null, after: await asAnswered(trx, team, inserted) });
    return inserted;
  });
  return store.toExperiment(await store.findExperimentById(db, team.id, id));
}

export async function updateExperiment(db: Db, team: TeamRow, key: string, input: ExperimentUpdate, change: Change, requireConfigFits: ConfigFits): Promise<Experiment> {
  const targeting = targetingColumns(input);
  const experiment = await requireExperiment(db, team, key);
  const goal = input.event === undefined ? undefined : await requireEvent(db, team, input.event);
  const guardrails = input.guardrails === undefined ? undefined : await guardrailIds(db, team, input.guardrails, goal?.id ?? experiment.event_id);
  if (goal && guardrails === undefined && store.guardrailsOf(experiment).some((event) => event.id === goal.id)) {
    throw new BadRequest(`Event '${input.event}' is a guardrail of experiment '${key}'; it cannot be its goal too.`, [
      { path: '/body/event', message: 'must not be one of the guardrails' },
    ]);
  }
  await changingConfig(db, team.id, async (trx) => {
    const at = now();
    // Read again under the team's lock: starts and other moves of the group wait for this change.
    const current = await store.findExperimentById(trx, team.id, experiment.id);
    if (current.status === 'running' && targeting.group_key !== undefined) await requireFreeRange(trx, team, { ...current, ...targeting });
    if (targeting.coverage !== undefined && targeting.coverage !== current.coverage) {
      await store.recordCoverageChange(trx, { team_id: team.id, experiment_id: current.id, changed_at: at, from_coverage: current.coverage, to_coverage: targeting.coverage });
    }
    await onDuplicate(
      store.updateExperiment(trx, experiment.id, team.id, {
        key: input.key,
        description: input.description,
        event_id: goal?.id,
        minimum_effect: input.minimum_effect,
        pre_exposure_days: input.pre_exposure_days,
        ...targeting,
        updated_at: at,
      }),
      () => duplicateKey(team, input.key ?? key),
    );
    if (guardrails !== undefined) await store.replaceGuardrails(trx, team.id, experiment.id, guardrails);
    if (current.status === 'running') await requireConfigFits(trx, team, largestField(input, ['key', 'event', 'conditions', 'coverage', 'exclusion_group']));
    const after = await asAnswered(trx, team, experiment.id);
    await record(trx, team.id, change, { resource: 'experiment', key: after.key, action: 'updated', before: store.toExperiment(current), after });
  });
  return store.toExperiment(await store.findExperimentById(db, team.id, experiment.id));
}

/** 409 naming a running experiment of the group whose range the experiment's would overlap. */
async function requireFreeRange(trx: Db, team: TeamRow, experiment: store.ExperimentRow): Promise<void> {
  const range = groupRangeOf(experiment);
  if (!range) return;
  const other = (await store.runningInGroup(trx, team.id, range.key)).find((running) => running.id !== experiment.id && rangesOverlap(range, groupRangeOf(running)!));
  if (other) {
    const { start, end } = store.toExperiment(other).exclusion_group!;
    throw new Conflict(`Experiment '${experiment.key}' would overlap running experiment '${other.key}' in exclusion group '${range.key}' (its range is [${start}, ${end})).`);
  }
}

export async function deleteExperiment(db: Db, team: TeamRow, key: string, change: Change): Promise<Experiment> {
  return changingConfig(db, team.id, async (trx) => {
    const experiment = await lockedExperiment(trx, team, key);
    if (experiment.status === 'running') throw new Conflict(`Experiment '${key}' is running; stop it before deleting it.`);
    await store.deleteExperiment(trx, experiment.id, team.id);
    await record(trx, team.id, change, { resource: 'experiment', key, action: 'deleted', before: store.toExperiment(experiment), after: null });
    return store.toExperiment(experiment);
  });
}

export async function startExperiment(db: Db, team: TeamRow, key: string, change: Change, requireConfigFits: ConfigFits): Promise<Experiment> {
  return changingConfig(db, team.id, async (trx) => {
    const experiment = await lockedExperiment(trx, team, key);
    if (experiment.status !== 'draft') throw new Conflict(`Experiment '${key}' is ${experiment.status}; only a draft can start.`);
    const problem = whyNotStartable(await variantsOf(trx, team.id, experiment.id));
    if (problem) throw new Conflict(`Experiment '${key}' cannot start: ${problem}.`);
    await requireRoomToRun(trx, team);
    await requireFreeRange(trx, team, experiment);
    const at = now();
    await store.transition(trx, experiment.id, team.id, 'draft', { status: 'running', started_at: at, updated_at: at });
    await requireConfigFits(trx, team, '/path/experiment');
    const after = await asAnswered(trx, team, experiment.id);
    await record(trx, team.id, change, { resource: 'experiment', key, action: 'started', before: store.toExperiment(experiment), after });
    return after;
  });
}

export async function stopExperiment(db: Db, team: TeamRow, key: string, change: Change): Promise<Experiment> {
  return changingConfig(db, team.id, async (trx) => {
    const experiment = await lockedExperiment(trx, team, key);
    if (experiment.status !== 'running') throw new Conflict(`Experiment '${key}' is ${experiment.status}; only a running experiment can stop.`);
    const at = now();
    await store.transition(trx, experiment.id, team.id, 'running', { status: 'stopped', stopped_at: at, updated_at: at });
    const after = await asAnswered(trx, team, experiment.id);
    await record(trx, team.id, change, { resource: 'experiment', key, action: 'stopped', before: store.toExperiment(experiment), after });
    return after;
  });
}

async function asAnswered(trx: Db, team: TeamRow, id: number): Promise<Experiment> {
  return store.toExperiment(await store.findExperimentById(trx, team.id, id));
}

function whyNotStartable(variants: Array<{ control: boolean | number; share: number }>): string | undefined {
  if (variants.length < 2) return `it has ${variants.length} variant(s), at least 2 are needed`;
  const controls = variants.filter((variant) => Boolean(variant.control)).length;
  if (controls !== 1) return `it has ${controls} control variants, exactly 1 is needed`;
  const total = variants.reduce((sum, variant) => sum + variant.share, 0);
  if (total !== 100) return `its variants' traffic sums to ${total}, not 100`;
  return undefined;
}

/** The ids of the guardrail events: 404 for an unknown key, 400 when the goal is among them. */
async function guardrailIds(db: Db, team: TeamRow, keys: string[], goalId: number): Promise<number[]> {
  const ids: number[] = [];
  for (const [index, key] of keys.entries()) {
    const event = await findEventOf(db, team.id, key);
    if (!event) throw new NotFound(`No event '${key}' in team ${team.id} (/body/guardrails/${index}).`);
    if (event.id === goalId) {
      throw new BadRequest(`Event '${key}' is the goal; a guardrail must be another event.`, [{ path: '/body/guardrails', message: 'must not contain the goal event' }]);
    }
    ids.push(event.id);
  }
  return ids;
}

function duplicateKey(team: TeamRow, key: string): Conflict {
  return new Conflict(`Team ${team.id} already has an experiment '${key}'.`);
}
