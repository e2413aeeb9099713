import type { components } from '../../generated/api';
import type { TeamRow } from '../teams/store';

type Config = components['schemas']['Config'];

/**
 * The last config built per team, served while the team's stored `config_version` is the one it
 * was built under (see changingConfig). Bounded: when full, it starts over.
 */
export class ConfigCache {
  readonly #entries = new Map<number, { version: number; config: Config }>();

  constructor(private readonly maxTeams = 10_000) {}

  get(team: TeamRow): Config | undefined {
    const entry = this.#entries.get(team.id);
    return entry?.version === team.config_version ? entry.config : undefined;
  }

  set(team: TeamRow, config: Config): void {
    const entry = this.#entries.get(team.id);
    // A slower read of an older version must not replace a newer one.
    if (entry && entry.version > team.config_version) return;
    if (!entry && this.#entries.size >= this.maxTeams) this.#entries.clear();
    this.#entries.set(team.id, { version: team.config_version, config });
  }
}
