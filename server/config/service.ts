import type { components } from '../../generated/api';
import { ConfigVersionCache } from './cache';
import type { Db } from '../storage/database';
import { LimitReached } from '../http/errors';
import { TEAM_LIMITS } from '../teams/limits';
import type { TeamRow } from '../teams/store';
import { rulesOf } from '../features/store';
import { toExperiment } from '../experiments/store';
import { runningWithVariants } from '../experiments/variants-store';
import { activeRolloutsOfTeam, toConfigRollout } from '../rollouts/store';

export type Config = components['schemas']['Config'];
/**
 * Each team's config at its current version, built once per version in this process: readers
 * that ask while it is being built (every stream of the team, at a change) wait for that build,
 * so they share one config object — and what is made of it, such as a stream's message.
 */
export class TeamConfigs {
  readonly #built: ConfigVersionCache<Config>;
  /** The build under way for a team, if any; gone once it settles. */
  readonly #building = new Map<number, { version: number; config: Promise<Config> }>();

  /** At most `teams` teams' configs (CACHE_TEAMS); one more starts the cache over. */
  constructor(teams?: number) {
    this.#built = new ConfigVersionCache<Config>(teams);
  }

  async current(db: Db, team: TeamRow): Promise<Config> {
    const built = this.#built.get(team.id, team.config_version);
    if (built) return built;
    const building = this.#building.get(team.id);
    if (building?.version === team.config_version) return building.config;
    const config = teamConfig(db, team);
    this.#building.set(team.id, { version: team.config_version, config });
    try {
      const value = await config;
      this.#built.set(team.id, team.config_version, value);
      return value;
    } finally {
      if (this.#building.get(team.id)?.config === config) this.#building.delete(team.id);
    }
  }
}

/** At most `teams` teams' configs (CACHE_TEAMS); one more starts the cache over. */
export function teamConfigs(teams?: number): TeamConfigs {
  return new TeamConfigs(teams);
}

/** The team's config at its current version, built once per version. */
export function currentConfig(db: Db, configs: TeamConfigs, team: TeamRow): Promise<Config> {
  return configs.current(db, team);
}

/**
 * 409 limit-reached naming `field` when the team's config, as the change under way in `trx`
 * leaves it, would be larger than a config may be (TEAM_LIMITS.configBytes): built in the
 * change's transaction, under the team's lock, so every part counts — experiments' conditions
 * and variants as much as flags. Called by the changes that can make the config larger, with the
 * field they change that the config carries (the largest): none, and there is nothing to check.
 */
export async function requireConfigFits(trx: Db, team: TeamRow, field: string | undefined): Promise<void> {
  if (field === undefined) return;
  // `{"data":` and `}` around the config's own JSON.
  const bytes = Buffer.byteLength(JSON.stringify(await teamConfig(trx, team))) + 9;
  const most = TEAM_LIMITS.configBytes;
  if (bytes <= most) return;
  const message = `would make the team's config ${bytes} bytes, more than ${most}`;
  throw new LimitReached(
    `This change would make team ${team.id}'s config (GET …/config) ${bytes} bytes, more than a config may be (${most}); nothing was changed. Make conditions, rules or values smaller, or stop an experiment first.`,
    [{ path: field, message }],
  );
}

/** Running experiments and every feature flag with its running or paused rollout: what an SDK needs to assign and flag locally. */
export async function teamConfig(db: Db, team: TeamRow): Promise<Config> {
  const [{ running, variants }, features, rollouts] = await Promise.all([
    runningWithVariants(db, team.id),
    db.selectFrom('features').select(['id', 'key', 'type', 'enabled', 'value', 'rules']).where('team_id', '=', team.id).orderBy('key').execute(),
    activeRolloutsOfTeam(db, team.id),
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
    features: features.map((feature) => {
      const rollout = rollouts.get(feature.id);
      return { key: feature.key, type: feature.type, enabled: Boolean(feature.enabled), value: feature.value, rules: rulesOf(feature), ...(rollout && { rollout: toConfigRollout(rollout) }) };
    }),
  };
}

const targetingOf = ({ hash_version, conditions, coverage, exclusion_group }: components['schemas']['Experiment']) => ({ hash_version, conditions, coverage, exclusion_group });
