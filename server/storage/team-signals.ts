import { sql } from 'kysely';
import type { Db } from './schema';

/** The PostgreSQL channel a committed change of a team's config is announced on; the payload is the team's id. */
export const CONFIG_CHANNEL = 'config_changed';

/** Called after a change of the team's config committed; also, for every team, when changes may have been missed. */
export type TeamListener = () => void;

/**
 * Tells this process's listeners that a team's config changed. On SQLite a change is announced
 * to the listeners of the process that made it, after its commit; on PostgreSQL it is a NOTIFY
 * inside the changing transaction, which the database delivers to every listening process (this
 * one included) when, and only when, it commits.
 */
export interface TeamSignals {
  /** Inside the changing transaction (PostgreSQL: NOTIFY). */
  announceWithin(trx: Db, teamId: number): Promise<void>;
  /** After the changing transaction committed (SQLite: this process's listeners). */
  announceCommitted(teamId: number): void;
  /** Listens to the team's changes until the returned function is called. */
  subscribe(teamId: number, listener: TeamListener): () => void;
  close(): Promise<void>;
}

/** The listeners of each team, and the calls to them. */
export class TeamListeners {
  readonly #byTeam = new Map<number, Set<TeamListener>>();

  add(teamId: number, listener: TeamListener): () => void {
    let listeners = this.#byTeam.get(teamId);
    if (!listeners) this.#byTeam.set(teamId, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#byTeam.get(teamId) === listeners) this.#byTeam.delete(teamId);
    };
  }

  get size(): number {
    let size = 0;
    for (const listeners of this.#byTeam.values()) size += listeners.size;
    return size;
  }

  call(teamId: number): void {
    for (const listener of [...(this.#byTeam.get(teamId) ?? [])]) listener();
  }

  callAll(): void {
    for (const teamId of [...this.#byTeam.keys()]) this.call(teamId);
  }
}

/** SQLite: within one process, after the commit. */
export function localSignals(): TeamSignals {
  const listeners = new TeamListeners();
  return {
    announceWithin: async () => {},
    announceCommitted: (teamId) => listeners.call(teamId),
    subscribe: (teamId, listener) => listeners.add(teamId, listener),
    close: async () => {},
  };
}

/** NOTIFY in the changing transaction: PostgreSQL delivers it at commit, to every process listening. */
export function notifyWithin(trx: Db, teamId: number): Promise<unknown> {
  return sql`select pg_notify(${CONFIG_CHANNEL}, ${String(teamId)})`.execute(trx);
}

const signalsByDb = new WeakMap<Db, TeamSignals>();

export function registerSignals(db: Db, signals: TeamSignals): void {
  signalsByDb.set(db, signals);
}

/** The signals of the storage `db` belongs to. */
export function signalsOf(db: Db): TeamSignals | undefined {
  return signalsByDb.get(db);
}
