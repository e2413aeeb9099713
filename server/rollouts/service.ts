import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api';
import { record, type Change } from '../audit/service';
import { changingConfig } from '../storage/config-version';
import * as features from '../features/store';
import { Conflict, NotFound } from '../http/errors';
import type { Db } from '../storage/database';
import { now, onDuplicate } from '../storage/values';
import { largestField, type ConfigFits } from '../teams/limits';
import type { TeamRow } from '../teams/store';
import { checkGuardrailEvents, checkRollout, stepsOf } from './checks';
import { observe } from './counters';
import { releaseValue, released, rolledBack } from './transitions';
import * as store from './store';

type Rollout = components['schemas']['Rollout'];
type RolloutCreate = components['schemas']['RolloutCreate'];
type Action = 'paused' | 'resumed' | 'rolled_back' | 'released';

const DEFAULT_SIGNIFICANCE = 0.05;

async function requireFeature(db: Db, team: TeamRow, key: string): Promise<features.FeatureRow> {
  const feature = await features.findFeature(db, team.id, key);
  if (!feature) throw new NotFound(`No feature '${key}' in team ${team.id}.`);
  return feature;
}

async function requireRollout(db: Db, team: TeamRow, feature: features.FeatureRow, number: number): Promise<store.RolloutRow> {
  const rollout = await store.findRollout(db, feature.id, number);
  if (!rollout) throw new NotFound(`No rollout ${number} of feature '${feature.key}' in team ${team.id}.`);
  return rollout;
}

export async function listRollouts(db: Db, team: TeamRow, featureKey: string): Promise<Rollout[]> {
  const feature = await requireFeature(db, team, featureKey);
  return Promise.all((await store.listRollouts(db, feature.id)).map(async (row) => store.toRollout(row, feature.key, await observe(db, row))));
}

export async function getRollout(db: Db, team: TeamRow, featureKey: string, number: number): Promise<Rollout> {
  const feature = await requireFeature(db, team, featureKey);
  const row = await requireRollout(db, team, feature, number);
  return store.toRollout(row, feature.key, await observe(db, row));
}

export async function createRollout(db: Db, team: TeamRow, featureKey: string, input: RolloutCreate, change: Change, requireConfigFits: ConfigFits): Promise<Rollout> {
  const steps = stepsOf(input);
  checkRollout((await requireFeature(db, team, featureKey)).type, input, steps);
  return changingConfig(db, team.id, async (trx) => {
    const feature = await requireFeature(trx, team, featureKey);
    checkRollout(feature.type, input, steps);
    await checkGuardrailEvents(trx, team, input);
    const active = await store.activeRollout(trx, feature.id);
    if (active) throw activeConflict(team, feature, active);
    const at = now();
    const row = await onDuplicate(
      store.insertRollout(trx, {
        team_id: team.id,
        feature_id: feature.id,
        number: await store.nextNumber(trx, feature.id),
        state: 'running',
        value: input.value,
        conditions: JSON.stringify(input.conditions ?? {}),
        guardrails: JSON.stringify(input.guardrails ?? []),
        steps: JSON.stringify(steps),
        significance: input.significance ?? DEFAULT_SIGNIFICANCE,
        step: 0,
        seed: randomBytes(16).toString('hex'),
        history: JSON.stringify([{ step: 0, percentage: steps[0]!.percentage, at }]),
        rollback: null,
        created_at: at,
        updated_at: at,
      }),
      () => new Conflict(`Feature '${feature.key}' of team ${team.id} already has a running or paused rollout; roll it back or release it first.`),
    );
    await requireConfigFits(trx, team, largestField(input, ['value', 'conditions']));
    const created = store.toRollout(row, feature.key, await observe(trx, row));
    await record(trx, team.id, change, { resource: 'rollout', key: `${feature.key}/${row.number}`, action: 'created', before: null, after: created });
    return created;
  });
}

function activeConflict(team: TeamRow, feature: features.FeatureRow, active: store.RolloutRow): Conflict {
  return new Conflict(`Feature '${feature.key}' of team ${team.id} already has rollout ${active.number}, which is ${active.state}; roll it back or release it first.`);
}

/** What each manual action requires and does. */
const ACTIONS: Record<Action, { from: store.RolloutState[]; to: store.RolloutState; verb: string }> = {
  paused: { from: ['running'], to: 'paused', verb: 'paused' },
  resumed: { from: ['paused'], to: 'running', verb: 'resumed' },
  rolled_back: { from: store.ACTIVE_STATES, to: 'rolled_back', verb: 'rolled back' },
  released: { from: store.ACTIVE_STATES, to: 'released', verb: 'released' },
};

/**
 * A manual action on a rollout, in one change of the team's config: 409 when the rollout is not
 * in a state the action applies to. Releasing also sets the flag's value to the rollout's.
 */
export async function act(db: Db, team: TeamRow, featureKey: string, number: number, action: Action, change: Change): Promise<Rollout> {
  const { from, to, verb } = ACTIONS[action];
  return changingConfig(db, team.id, async (trx) => {
    const feature = await requireFeature(trx, team, featureKey);
    const rollout = await requireRollout(trx, team, feature, number);
    if (!from.includes(rollout.state)) throw new Conflict(`Rollout ${number} of feature '${feature.key}' is ${rollout.state}; only a ${from.join(' or ')} rollout can be ${verb}.`);
    const at = now();
    const changes = action === 'rolled_back' ? rolledBack(at) : action === 'released' ? released(rollout, at) : { state: to, updated_at: at };
    const updated = (await store.updateRollout(trx, rollout.id, from, changes))!;
    const observed = await observe(trx, rollout);
    const after = store.toRollout(updated, feature.key, observed);
    await record(trx, team.id, change, { resource: 'rollout', key: `${feature.key}/${number}`, action, before: store.toRollout(rollout, feature.key, observed), after });
    if (action === 'released') await releaseValue(trx, team, feature, updated.value, change);
    return after;
  });
}
