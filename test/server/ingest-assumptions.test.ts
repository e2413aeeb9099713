// Which flushes decide on what their process saw instead of reading first (ingest/assumed-flushes.ts).
import { describe, expect, it } from 'vitest';
import { AssumedFlushes, KNOWN_PARTICIPANTS, MAX_SKIPPED } from '../../server/ingest/assumed-flushes';
import { ingestContexts, type IngestContext } from '../../server/ingest/context';
import { UnknownKeys } from '../../server/ingest/unknown-keys';
import { participantKey } from '../../server/ledger/change';
import type { IngestJob } from '../../server/ingest/flush';
import type { TeamRow } from '../../server/teams/store';

const team = (id: number) => ({ id, ingest_limit: null }) as TeamRow;
const context: IngestContext = { running: [], variants: new Map(), events: new Map(), others: new Map(), unknown: new UnknownKeys().of(1, 4), rollouts: new Map(), rolloutsById: new Map() };

/** Ingests of these participants of team 1, whose context this process built at version 4. */
function jobsOf(...participants: string[]): IngestJob[] {
  const contexts = ingestContexts();
  contexts.set(1, 4, context);
  return participants.map((participant) => ({ team: team(1), contexts, input: { participant }, resolve: () => {}, reject: () => {} }));
}

describe('flushes that decide on assumptions', () => {
  it('when a flush names only participants this process has not seen, then it assumes the latest context and the last quota use', () => {
    const assumed = new AssumedFlushes();
    expect(assumed.assumption(jobsOf('a', 'b'), new Map([[1, 7]]))).toEqual({ versions: new Map([[1, 4]]), used: new Map([[1, 7]]) });
  });

  it('when its team has no context yet, or it names a participant this process stored or read, then it reads first', () => {
    const assumed = new AssumedFlushes();
    const [job] = jobsOf('a');
    expect(assumed.assumption([{ ...job!, team: team(2) }], new Map())).toBeUndefined();
    assumed.remember([participantKey(1, 'b')]);
    expect(assumed.assumption(jobsOf('a', 'b'), new Map())).toBeUndefined();
    expect(assumed.assumption(jobsOf('a'), new Map())).toBeDefined();
  });

  it('when more participants are remembered than it keeps, then the oldest are forgotten first', () => {
    const assumed = new AssumedFlushes();
    const participants = Array.from({ length: 2 * KNOWN_PARTICIPANTS }, (_, i) => `p${i}`);
    const known = () => participants.filter((key) => assumed.assumption(jobsOf(key), new Map()) === undefined);
    assumed.remember(participants.slice(0, -1).map((key) => participantKey(1, key)));
    expect(known()).toEqual(participants.slice(0, -1));
    assumed.remember([participantKey(1, participants.at(-1)!)]);
    expect(known()).toEqual(participants.slice(KNOWN_PARTICIPANTS));
  });

  it("when a team's assumptions fail again and again, then it reads first for 1, 2, 4 … up to MAX_SKIPPED flushes between tries; once they hold, it tries every flush", () => {
    const assumed = new AssumedFlushes();
    const pauses: number[] = [];
    for (let failure = 0; failure < 9; failure++) {
      assumed.settled([1], false);
      let paused = 0;
      while (!assumed.assumption(jobsOf('a'), new Map())) paused++;
      pauses.push(paused);
    }
    assumed.settled([1], true);
    expect(pauses).toEqual([1, 2, 4, 8, 16, 32, 64, 64, 64].map((n) => Math.min(n, MAX_SKIPPED)));
    expect(assumed.assumption(jobsOf('a'), new Map())).toBeDefined();
  });
});
