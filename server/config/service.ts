import type { components } from '../../generated/api';
import { listRunningExperiments } from '../experiments/store';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { variantsOfMany } from '../variants/store';

export type Config = components['schemas']['Config'];

/** Running experiments and every feature flag: what an SDK needs to assign and flag locally. */
export async function teamConfig(db: Db, team: TeamRow): Promise<Config> {
  const [experiments, features] = await Promise.all([
    listRunningExperiments(db, team.id),
    db.selectFrom('features').select(['key', 'enabled', 'value']).where('team_id', '=', team.id).orderBy('key').execute(),
  ]);
  const variants = await variantsOfMany(db, team.id, experiments.map((experiment) => experiment.id));
  return {
    team: team.id,
    experiments: experiments.map((experiment) => ({
      key: experiment.key,
      seed: experiment.seed,
      event: experiment.event_key,
      variants: (variants.get(experiment.id) ?? []).map((variant) => ({ key: variant.key, control: Boolean(variant.control), traffic: variant.share })),
    })),
    features: features.map((feature) => ({ key: feature.key, enabled: Boolean(feature.enabled), value: feature.value })),
  };
}
