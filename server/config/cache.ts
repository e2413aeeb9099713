/**
 * Per team, the last value built from what its config holds (experiments, variants, goal events,
 * flags), kept while the team's stored `config_version` is the one it was built under (see
 * changingConfig). Each server keeps its own; bounded: when full, it starts over.
 */
export class ConfigVersionCache<T> {
  readonly #entries = new Map<number, { version: number; value: T }>();

  constructor(private readonly maxTeams = 10_000) {}

  get(teamId: number, version: number): T | undefined {
    const entry = this.#entries.get(teamId);
    return entry?.version === version ? entry.value : undefined;
  }

  /** The value built under the newest version seen so far, whatever the stored version is now: for estimates only. */
  latest(teamId: number): T | undefined {
    return this.#entries.get(teamId)?.value;
  }

  /** The version `latest` was built under. */
  latestVersion(teamId: number): number | undefined {
    return this.#entries.get(teamId)?.version;
  }

  set(teamId: number, version: number, value: T): void {
    const entry = this.#entries.get(teamId);
    // A slower read of an older version must not replace a newer one.
    if (entry && entry.version > version) return;
    if (!entry && this.#entries.size >= this.maxTeams) this.#entries.clear();
    this.#entries.set(teamId, { version, value });
  }
}
