import type { components } from '../../generated/api';
import { record, type Change } from '../audit/service';
import { changingConfig } from '../storage/config-version';
import { Conflict, NotFound } from '../http/errors';
import type { PageRequest } from '../routes/pagination';
import type { Db } from '../storage/database';
import { countInTeam } from '../storage/counts';
import { now, onDuplicate } from '../storage/values';
import { largestField, requireRoomFor, requireRoomForValue, type ConfigFits } from '../teams/limits';
import type { TeamRow } from '../teams/store';
import { checkPatterns, checkRules, checkValues, flagText, rulesText } from './rules';
import * as store from './store';

type Feature = components['schemas']['Feature'];
type FeatureCreate = components['schemas']['FeatureCreate'];
type FeatureUpdate = components['schemas']['FeatureUpdate'];

async function requireFeature(db: Db, team: TeamRow, key: string): Promise<store.FeatureRow> {
  const feature = await store.findFeature(db, team.id, key);
  if (!feature) throw featureNotFound(team, key);
  return feature;
}

function featureNotFound(team: TeamRow, key: string): NotFound {
  return new NotFound(`No feature '${key}' in team ${team.id}.`);
}

export async function listFeatures(db: Db, team: TeamRow, page: PageRequest) {
  const [rows, total] = await Promise.all([store.listFeatures(db, team.id, page.perPage, page.offset), countInTeam(db, 'features', team.id)]);
  return { items: rows.map(store.toFeature), total };
}

export async function getFeature(db: Db, team: TeamRow, key: string): Promise<Feature> {
  return store.toFeature(await requireFeature(db, team, key));
}

export async function createFeature(db: Db, team: TeamRow, input: FeatureCreate, change: Change, requireConfigFits: ConfigFits): Promise<Feature> {
  const at = now();
  const type = input.type ?? 'string';
  checkValues({ type, value: { text: input.value ?? null, given: true }, rules: { list: input.rules ?? [], given: true } });
  const row = await changingConfig(db, team.id, async (trx) => {
    await requireRoomFor(trx, team, 'features');
    const patterns = input.rules ? await checkRules(trx, team, input.rules) : [];
    await requireRoomForValue(trx, team, flagText(input.value, input.rules));
    checkPatterns(patterns);
    const created = await onDuplicate(
      store.insertFeature(trx, {
        team_id: team.id,
        key: input.key,
        description: input.description ?? null,
        type,
        enabled: input.enabled ?? false,
        value: input.value ?? null,
        rules: rulesText(input.rules ?? []),
        created_at: at,
        updated_at: at,
      }),
      () => duplicateKey(team, input.key),
    );
    await requireConfigFits(trx, team, largestField(input, CONFIG_FIELDS));
    await record(trx, team.id, change, { resource: 'flag', key: created.key, action: 'created', before: null, after: store.toFeature(created) });
    return created;
  });
  return store.toFeature(row);
}

/** A flag's fields that its entry in the config carries. */
const CONFIG_FIELDS = ['key', 'type', 'enabled', 'value', 'rules'];

export async function updateFeature(db: Db, team: TeamRow, key: string, input: FeatureUpdate, change: Change, requireConfigFits: ConfigFits): Promise<Feature> {
  checkUpdate(await requireFeature(db, team, key), input);
  const row = await changingConfig(db, team.id, async (trx) => {
    // Read again under the team's lock: what another update stored since the first read counts.
    const feature = await store.findFeature(trx, team.id, key);
    if (!feature) throw new NotFound(`Feature '${key}' of team ${team.id} was deleted by another request while this one was updating it; nothing was changed.`);
    checkUpdate(feature, input);
    const patterns = input.rules ? await checkRules(trx, team, input.rules) : [];
    await requireRoomForValue(trx, team, flagText(input.value === undefined ? feature.value : input.value, input.rules ?? store.rulesOf(feature)), feature.id);
    checkPatterns(patterns);
    const { rules, ...fields } = input;
    const changes = { ...fields, ...(rules ? { rules: rulesText(rules) } : {}), updated_at: now() };
    const updated = (await onDuplicate(store.updateFeature(trx, feature.id, team.id, changes), () => duplicateKey(team, input.key ?? key)))!;
    await requireConfigFits(trx, team, largestField(input, CONFIG_FIELDS));
    await record(trx, team.id, change, { resource: 'flag', key: updated.key, action: 'updated', before: store.toFeature(feature), after: store.toFeature(updated) });
    return updated;
  });
  return store.toFeature(row!);
}

/** 400 when the update's values, with the flag's own where the update leaves them, do not read as the flag's type. */
function checkUpdate(feature: store.FeatureRow, input: FeatureUpdate): void {
  checkValues({
    type: input.type ?? feature.type,
    value: input.value === undefined ? { text: feature.value, given: false } : { text: input.value, given: true },
    rules: input.rules ? { list: input.rules, given: true } : { list: store.rulesOf(feature), given: false },
  });
}

export async function deleteFeature(db: Db, team: TeamRow, key: string, change: Change): Promise<Feature> {
  const feature = await requireFeature(db, team, key);
  // Answers with the row as it was deleted; a concurrent delete that got there first makes this a 404.
  const row = await changingConfig(db, team.id, async (trx) => {
    const deleted = await store.deleteFeature(trx, feature.id, team.id);
    if (deleted) await record(trx, team.id, change, { resource: 'flag', key: deleted.key, action: 'deleted', before: store.toFeature(deleted), after: null });
    return deleted;
  });
  if (!row) throw featureNotFound(team, key);
  return store.toFeature(row);
}

function duplicateKey(team: TeamRow, key: string): Conflict {
  return new Conflict(`Team ${team.id} already has a feature '${key}'.`);
}
