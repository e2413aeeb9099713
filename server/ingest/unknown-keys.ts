/** What was looked up by key and not found: an event or an experiment. */
export type UnknownKind = 'event' | 'experiment';

/**
 * Event and experiment keys that ingests named and that were not found, by team and config
 * version: at most `max` of them in all, whatever keys clients send. Two generations — the newer
 * fills up to half of `max` (rounded up), then replaces the older — so the oldest half is forgotten at once;
 * a forgotten key costs one query again when it is named.
 */
export class UnknownKeys {
  #newer = new Set<string>();
  #older = new Set<string>();
  readonly #half: number;

  constructor(readonly max = 100_000) {
    this.#half = Math.ceil(max / 2);
  }

  get size(): number {
    return this.#newer.size + this.#older.size;
  }

  /** The keys unknown to the team at one config version. */
  of(team: number, version: number): UnknownKeysAt {
    const id = (kind: UnknownKind, key: string) => `${team}\u0000${version}\u0000${kind}\u0000${key}`;
    return {
      has: (kind, key) => this.#newer.has(id(kind, key)) || this.#older.has(id(kind, key)),
      add: (kind, key) => this.#add(id(kind, key)),
    };
  }

  #add(id: string): void {
    this.#newer.add(id);
    if (this.#newer.size < this.#half) return;
    this.#older = this.#newer;
    this.#newer = new Set();
  }
}

/** The keys unknown to one team at one config version. */
export interface UnknownKeysAt {
  has(kind: UnknownKind, key: string): boolean;
  add(kind: UnknownKind, key: string): void;
}
