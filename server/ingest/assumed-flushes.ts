import { participantKey } from '../ledger/change';
import type { Assumption, QuotaUse } from '../ledger/port';
import type { IngestJob } from './flush';

/** Participants this process remembers as stored (or being stored): at most twice this many, the oldest half forgotten at once. */
export const KNOWN_PARTICIPANTS = 10_000;
/** Flushes of a team that read first, at most, after its assumptions failed again and again. */
export const MAX_SKIPPED = 64;

/**
 * Which flushes decide on assumptions. A flush whose ingests name a participant this process has
 * stored or read recently reads first: its histories decide. A team whose assumptions failed —
 * a participant another process stored, a change of its config — reads first for its next 1, 2,
 * 4 … 64 flushes, then tries again; one that held ends the pause.
 */
export class AssumedFlushes {
  // Two generations: the newer fills up to KNOWN_PARTICIPANTS, then replaces the older. (Deleting
  // the oldest key of one Set one at a time made each deletion slower than the last.)
  #known = new Set<string>();
  #older = new Set<string>();
  readonly #paused = new Map<number, { failures: number; left: number }>();

  /** The assumption a flush of `jobs` may decide on, or none. `used` is each team's quota use at the last flush. */
  assumption(jobs: IngestJob[], used: QuotaUse): Assumption | undefined {
    const versions = new Map<number, number>();
    for (const { team, contexts, input } of jobs) {
      if (!versions.has(team.id)) {
        const version = contexts.latestVersion(team.id);
        if (version === undefined || this.#pausing(team.id)) return undefined;
        versions.set(team.id, version);
      }
      if (this.#knows(participantKey(team.id, typeof input.participant === 'string' ? input.participant : input.participant.key))) return undefined;
    }
    return { versions, used: new Map([...versions.keys()].map((team) => [team, used.get(team) ?? 0])) };
  }

  /** Participants (participantKey) a flush is about to store, or has read. */
  remember(participants: Iterable<string>): void {
    for (const key of participants) {
      this.#known.add(key);
      if (this.#known.size < KNOWN_PARTICIPANTS) continue;
      this.#older = this.#known;
      this.#known = new Set();
    }
  }

  #knows(participant: string): boolean {
    return this.#known.has(participant) || this.#older.has(participant);
  }

  /** Whether the assumptions of a flush of these teams held. */
  settled(teams: Iterable<number>, held: boolean): void {
    for (const team of teams) {
      if (held) this.#paused.delete(team);
      else {
        const failures = (this.#paused.get(team)?.failures ?? 0) + 1;
        this.#paused.set(team, { failures, left: Math.min(2 ** (failures - 1), MAX_SKIPPED) });
      }
    }
  }

  #pausing(team: number): boolean {
    const pause = this.#paused.get(team);
    if (!pause || pause.left === 0) return false;
    pause.left--;
    return true;
  }
}
