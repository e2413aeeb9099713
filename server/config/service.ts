import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { runningWithVariants } from '../variants/store';

export type Config = components['schemas']['Config'];

/** Running experiments and every feature flag: what an SDK needs to assign and flag locally. */
export async function teamConfig(db: Db, team: TeamRow): Promise<Config> {
  const [{ running, variants }, features] = await Promise.all([
    runningWithVariants(db, team.id),
    db.selectFrom('features').select(['key', 'enabled', 'value']).where('team_id', '=', team.id).orderBy('key').execute(),
  ]);
  return {
    team: team.id,
    experiments: running.map((experiment) => ({
      key: experiment.key,
      seed: experiment.seed,
      event: experiment.event_key,
      variants: (variants.get(experiment.id) ?? []).map((variant) => ({ key: variant.key, control: Boolean(variant.control), traffic: variant.share })),
    })),
    features: features.map((feature) => ({ key: feature.key, enabled: Boolean(feature.enabled), value: feature.value })),
  };
}
