import type { components } from '../../generated/api';
import { ConfigVersionCache } from './cache';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { rulesOf } from '../features/store';
import { toExperiment } from '../experiments/store';
import { runningWithVariants } from '../variants/store';

export type Config = components['schemas']['Config'];
export type TeamConfigs = ConfigVersionCache<Config>;

/** At most `teams` teams' configs (CACHE_TEAMS); one more starts the cache over. */
export function teamConfigs(teams?: number): TeamConfigs {
  return new ConfigVersionCache<Config>(teams);
}

/** The team's config at its current version, built once per version. */
export async function currentConfig(db: Db, configs: TeamConfigs, team: TeamRow): Promise<Config> {
  let config = configs.get(team.id, team.config_version);
  if (!config) {
    config = await teamConfig(db, team);
    configs.set(team.id, team.config_version, config);
  }
  return config;
}

/** Running experiments and every feature flag: what an SDK needs to assign and flag locally. */
export async function teamConfig(db: Db, team: TeamRow): Promise<Config> {
  const [{ running, variants }, features] = await Promise.all([
    runningWithVariants(db, team.id),
    db.selectFrom('features').select(['key', 'type', 'enabled', 'value', 'rules']).where('team_id', '=', team.id).orderBy('key').execute(),
  ]);
  return {
    team: team.id,
    experiments: running.map((experiment) => ({
      key: experiment.key,
      seed: experiment.seed,
      ...targetingOf(toExperiment(experiment)),
      event: experiment.event_key,
      variants: (variants.get(experiment.id) ?? []).map((variant) => ({ key: variant.key, control: Boolean(variant.control), traffic: variant.share })),
    })),
    features: features.map((feature) => ({ key: feature.key, type: feature.type, enabled: Boolean(feature.enabled), value: feature.value, rules: rulesOf(feature) })),
  };
}

const targetingOf = ({ hash_version, conditions, coverage, exclusion_group }: components['schemas']['Experiment']) => ({ hash_version, conditions, coverage, exclusion_group });
