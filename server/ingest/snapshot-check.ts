// What flush.ts's FlushRead, IngestJob and ParticipantState (ledger/change.ts) hold that a check reads.
interface FlushRead {
  versions: Map<number, number>;
  used: Map<number, number>;
  keys: Map<string, string>;
}
type IngestJob = { team: { id: number; ingest_limit: number | null } };
interface ParticipantState {
  row: object;
  enrolments: object[];
  excluded: Set<number>;
  conversions: Map<string, { count: number; value: bigint }>;
  rollouts: Map<number, string>;
  rolloutConversions: Map<string, { count: number; value: bigint }>;
}

/**
 * What a flush that decided outside the write lock (FlushStatements.snapshot) decided on: each
 * team's config version and quota use before it, the stored idempotency keys it asked for, and
 * each participant its accepted ingests name, as read with its histories (`''`: not stored).
 * Nothing else a decision reads can differ: its team's context is that of the config version,
 * and which ingests it accepts follows from the version, the quota use and the keys.
 */
export interface Snapshot {
  versions: Map<number, number>;
  used: Map<number, number>;
  keys: Map<string, string>;
  participants: Map<string, string>;
}

/** `read` as the flush decided on it (before its decisions raised the quota use), and its accepted ingests' participants (participantKey) before they change. */
export function snapshotOf(read: FlushRead, participants: Map<string, ParticipantState>, accepted: string[]): Snapshot {
  return { versions: read.versions, used: read.used, keys: read.keys, participants: new Map(accepted.map((key) => [key, described(participants.get(key))])) };
}

/**
 * Whether the flush's decisions stand on what it reads under the lock: the same config versions,
 * idempotency keys and participants; each team's quota use the same, or — another process took
 * some meanwhile — still leaving room for every ingest of the flush, before and now, so that no
 * ingest's answer turns on it.
 */
export function stillHolds(snapshot: Snapshot, jobs: IngestJob[], read: FlushRead, participants: Map<string, ParticipantState>): boolean {
  if ([...snapshot.versions].some(([team, version]) => read.versions.get(team) !== version)) return false;
  if (read.keys.size !== snapshot.keys.size || [...snapshot.keys].some(([key, outcome]) => read.keys.get(key) !== outcome)) return false;
  if (!quotaHolds(snapshot.used, read.used, jobs)) return false;
  return [...snapshot.participants].every(([key, seen]) => described(participants.get(key)) === seen);
}

function quotaHolds(before: Map<number, number>, now: Map<number, number>, jobs: IngestJob[]): boolean {
  const ingests = new Map<number, number>();
  for (const { team } of jobs) ingests.set(team.id, (ingests.get(team.id) ?? 0) + 1);
  return jobs.every(({ team }) => {
    const [was, is] = [before.get(team.id)!, now.get(team.id)!];
    if (was === is || team.ingest_limit === null) return true;
    return Math.max(was, is) + ingests.get(team.id)! <= team.ingest_limit;
  });
}

/** A participant as the flush read it: its row, enrolments, exclusions and conversions, its rollouts' arms and guardrail conversions. */
function described(state: ParticipantState | undefined): string {
  if (!state) return '';
  const totals = (map: Map<string, { count: number; value: bigint }>) => [...map].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, { count, value }]) => [key, count, value.toString()]);
  const rollouts = [...state.rollouts].sort(([a], [b]) => a - b);
  return JSON.stringify([state.row, state.enrolments, [...state.excluded].sort((a, b) => a - b), totals(state.conversions), rollouts, totals(state.rolloutConversions)]);
}
