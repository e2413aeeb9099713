import { CompiledQuery } from 'kysely';
import type { components } from '../../generated/api';
import { HttpError, QuotaExceeded } from '../http/errors';
import { participantKey, type LedgerChange, type ParticipantState } from '../ledger/change';
import type { AssumedChecks, Assumption, FlushRead, Ledger, NamedParticipant, Opening, QuotaUse, StoredParticipants } from '../ledger/port';
import type { Db } from '../storage/database';
import { now } from '../storage/values';
import type { TeamRow } from '../teams/store';
import { requireVariant } from '../variants/service';
import { contextAt, eventOf, experimentOf, rolloutOf, variantsIn, type IngestContext, type IngestContexts } from './context';
import { keyCutoff, KeyedItems } from './keys';
import { admission, carriedValue, givenParticipant, planChange, statesOf, type PlanBase, type ResolvedIngest } from './plan';
import { quotaMonth } from '../teams/quota';
import { snapshotOf, stillHolds, type Snapshot } from './snapshot-check';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];

/** One ingest waiting for its flush, and what its caller is told once the flush has committed. */
export interface IngestJob {
  team: TeamRow;
  contexts: IngestContexts;
  input: IngestRequest;
  resolve: (outcome: IngestOutcome) => void;
  reject: (error: unknown) => void;
}

const ROLLBACK = CompiledQuery.raw('rollback');

/** What a flush is given besides its ingests. */
export interface FlushOptions {
  keyWindowMs: number;
  /** The participants of the ingests it expects to accept (expected-participants.ts), distinct. */
  expected: NamedParticipant[];
  /** What it may decide on without reading it first, where the engine can check it (assumed-flushes.ts). */
  assumption?: Assumption;
  /** Called once it has read all it reads, as its write is sent, with the participants (participantKey) its accepted ingests name. */
  writing?: (participants: string[]) => void;
}

/** What a flush leaves its flusher: its teams' quota use after it, and whether it decided on an assumption that held. */
export interface FlushSeen {
  used: QuotaUse;
  assumed?: 'held' | 'changed';
}

/**
 * A flush of concurrent ingests in a number of statements that does not grow with their number.
 * Under the write locks of their teams (so no other writer of these teams' rows runs meanwhile,
 * in any process), it reads each team's config version and quota use in one query (with the
 * stored ones among the ingests' idempotency keys), and decides which ingests are replays of a
 * stored key — answered its stored outcome, nothing else done — and which are refused — their
 * own 404, 409 or 402, storing nothing of them — from the team's cached context, with no query
 * per ingest. It reads the participants — their enrolments, exclusions and conversions too —
 * of the ingests it expects to accept (expected-participants.ts) with the teams, and of any other it accepts
 * once decided. It decides each accepted ingest in order exactly as a single ingest alone
 * would be decided, writes what they change (a statement per table at most) and commits once:
 * each caller is answered after the commit.
 * Given an assumption the engine can check, it decides first, on the assumption, and sends the
 * check, the write and the commit at once; where the check fails it reads as above, still under
 * its locks, and decides again. Where the engine has one write lock for the whole database
 * (Ledger.snapshot), it reads and decides in a snapshot first, without the lock, and
 * under it reads again: what it decided is written if what it read still holds, else it decides
 * again there.
 */
export async function flushIngests(db: Db, statements: Ledger, jobs: IngestJob[], options: FlushOptions): Promise<FlushSeen> {
  let flushed: Flushed = { outcomes: [], used: new Map() };
  try {
    await db.connection().execute(async (connection) => {
      try {
        flushed = await ingestAll(connection, statements, jobs, options);
      } catch (error) {
        await connection.executeQuery(ROLLBACK).catch(() => {});
        throw error;
      }
    });
  } catch (error) {
    for (const job of jobs) job.reject(error);
    return { used: new Map() };
  }
  for (const { job, outcome } of flushed.outcomes) {
    if (outcome instanceof HttpError) job.reject(outcome);
    else job.resolve(outcome);
  }
  return { used: flushed.used, assumed: flushed.assumed };
}

/** What a flush decided for each of its ingests, in their order, and its teams' quota use after it. */
interface Flushed extends FlushSeen {
  outcomes: Array<{ job: IngestJob; outcome: IngestOutcome | HttpError }>;
}

/** One ingest resolved from its team's context, before anything is read of its participant. */
type Resolved = ResolvedIngest & { job: IngestJob };

async function ingestAll(db: Db, statements: Ledger, jobs: IngestJob[], { keyWindowMs, expected, assumption, writing = () => {} }: FlushOptions): Promise<Flushed> {
  const at = now();
  const month = quotaMonth(at);
  const cutoff = keyCutoff(at, keyWindowMs);
  const teams = [...new Set(jobs.map((job) => job.team.id))].sort((a, b) => a - b);
  let afterAssumption = false;
  if (assumption && statements.commitAssuming) {
    const keyed = new KeyedItems(jobs);
    const decided = await decide(db, jobs, keyed, { versions: assumption.versions, used: new Map(assumption.used), keys: new Map() }, at);
    // A 402 decided on another process's old quota use could be wrong: read it first.
    if (![...decided.refused.values()].some((refusal) => refusal instanceof QuotaExceeded)) {
      const { flush, accepted } = settle(decided, { at, month, cutoff, participants: new Map() });
      writing([...flush.participants.keys()]);
      const checks: AssumedChecks = { month, cutoff, teams: assumedTeams(teams, assumption, decided), participants: namedIn(flush), keys: keyed.named };
      const usedBefore = await statements.commitAssuming(db, checks, decided.admitted.length > 0 ? flush : undefined);
      if (usedBefore) {
        const used = new Map(teams.map((team) => [team, (usedBefore.get(team) ?? 0) + (flush.quota.get(team) ?? 0)]));
        return { outcomes: outcomesOf(jobs, decided, accepted), used, assumed: 'held' };
      }
      afterAssumption = true;
    }
  }
  const opening = { teams, month, cutoff, expected, afterAssumption };
  const early = statements.snapshot && !afterAssumption ? await decideOnSnapshot(db, statements, jobs, opening, at) : undefined;
  const keyed = new KeyedItems(jobs);
  const { read, participants: stored } = await statements.open(db, { ...opening, keys: keyed.named });
  const gone = teams.find((team) => !read.versions.has(team));
  if (gone !== undefined) throw new Error(`No team ${gone}.`);
  if (early && stillHolds(early.seen, jobs, read, await readParticipants(db, statements, early.decided.admitted, expected, stored))) {
    writing([...early.flush.participants.keys()]);
    await statements.commit(db, early.decided.admitted.length > 0 ? early.flush : undefined);
    const used = new Map([...read.used].map(([team, count]) => [team, count + (early.decided.quota.get(team) ?? 0)]));
    return { outcomes: outcomesOf(jobs, early.decided, early.accepted), used };
  }
  const decided = await decide(db, jobs, keyed, read, at);
  const participants = await readParticipants(db, statements, decided.admitted, expected, stored);
  const { flush, accepted } = settle(decided, { at, month, cutoff, participants });
  writing([...flush.participants.keys()]);
  await statements.commit(db, decided.admitted.length > 0 ? flush : undefined);
  return { outcomes: outcomesOf(jobs, decided, accepted), used: read.used, ...(afterAssumption && { assumed: 'changed' as const }) };
}

/**
 * The flush decided in a snapshot (Ledger.snapshot), outside the write lock, with what
 * the decision depended on; none if a team is gone (the flush under the lock says so).
 */
async function decideOnSnapshot(db: Db, statements: Ledger, jobs: IngestJob[], opening: Omit<Opening, 'keys'>, at: string) {
  const keyed = new KeyedItems(jobs);
  const { read, participants: stored } = await statements.snapshot!.open(db, { ...opening, keys: keyed.named });
  let decided: Decided;
  let participants: Map<string, ParticipantState>;
  let seen: Snapshot;
  try {
    if (opening.teams.some((team) => !read.versions.has(team))) return undefined;
    const usedBefore = new Map(read.used);
    decided = await decide(db, jobs, keyed, read, at);
    participants = await readParticipants(db, statements, decided.admitted, opening.expected, stored);
    seen = snapshotOf({ ...read, used: usedBefore }, participants, decided.admitted.map((unit) => participantKey(unit.job.team.id, unit.given.key)));
  } finally {
    await statements.snapshot!.close(db);
  }
  return { seen, decided, ...settle(decided, { at, month: opening.month, cutoff: opening.cutoff, participants }) };
}

/** A flush's decisions: its accepted ingests in order, its refused ones, and what each team accepts. */
interface Decided {
  keyed: KeyedItems<IngestJob>;
  admitted: Resolved[];
  refused: Map<IngestJob, HttpError>;
  quota: Map<number, number>;
}

/**
 * Each ingest decided in order against `read`: a replay of a stored key, refused (404, 409, 402),
 * or accepted — counted against the quota use in `read`, which it raises.
 */
async function decide(db: Db, jobs: IngestJob[], keyed: KeyedItems<IngestJob>, read: FlushRead, at: string): Promise<Decided> {
  // Each team's context once per flush, at the config version read under the team's lock: it holds for the whole flush.
  const contexts = new Map<number, IngestContext>();
  const decided: Decided = { keyed, admitted: [], refused: new Map(), quota: new Map() };
  for (const job of jobs) {
    // A replay is decided first: nothing is checked, stored or charged for it.
    if (keyed.isReplay(job, read.keys)) continue;
    let context = contexts.get(job.team.id);
    if (!context) contexts.set(job.team.id, (context = await contextAt(db, job.contexts, job.team, read.versions.get(job.team.id)!)));
    const unit = await resolve(db, job, context).catch((error: unknown) => (error instanceof HttpError ? error : Promise.reject(error)));
    const refusal = unit instanceof HttpError ? unit : admission(read.used, unit, at);
    if (refusal) decided.refused.set(job, refusal);
    else {
      decided.admitted.push(unit as Resolved);
      keyed.admitted(job);
      decided.quota.set(job.team.id, (decided.quota.get(job.team.id) ?? 0) + 1);
    }
  }
  return decided;
}

/** The accepted ingests applied in order to the participants as the flush knows them: what it writes, and each caller's answer. */
function settle(decided: Decided, base: Omit<PlanBase, 'quota'>) {
  const { change, outcomes } = planChange(decided.admitted, { ...base, quota: decided.quota });
  const accepted = new Map(decided.admitted.map((unit, i) => [unit.job, outcomes[i]!]));
  change.keys = decided.keyed.toStore(accepted);
  return { flush: change, accepted };
}

function outcomesOf(jobs: IngestJob[], { refused, keyed }: Decided, accepted: Map<IngestJob, IngestOutcome>): Flushed['outcomes'] {
  return jobs.map((job) => ({ job, outcome: refused.get(job) ?? accepted.get(job) ?? keyed.replayed(job, accepted) }));
}

/** Each team's assumed config version, the ingests it accepts and the least quota of any of them. */
function assumedTeams(teams: number[], assumption: Assumption, { admitted, quota }: Decided): AssumedChecks['teams'] {
  return teams.map((id) => {
    const limits = admitted.filter((unit) => unit.job.team.id === id && unit.job.team.ingest_limit !== null).map((unit) => unit.job.team.ingest_limit!);
    return { id, version: assumption.versions.get(id)!, accepted: quota.get(id) ?? 0, limit: limits.length === 0 ? null : Math.min(...limits) };
  });
}

/** The participants a flush that read none creates: every one it names. */
function namedIn(flush: LedgerChange): NamedParticipant[] {
  return [...flush.participants.values()].map((state) => ({ team: state.row.team_id, key: state.row.key }));
}

/** The event, experiment and variant an ingest names, from its team's context (404 if any is unknown). */
async function resolve(db: Db, job: IngestJob, context: IngestContext): Promise<Resolved> {
  const { team, input } = job;
  const event = input.event === undefined ? undefined : await eventOf(db, team, context, input.event);
  const target = input.experiment === undefined ? undefined : await experimentOf(db, team, context, input.experiment);
  const chosen = target && input.variant !== undefined ? requireVariant(await variantsIn(db, team, context, target), target, input.variant) : undefined;
  const given = givenParticipant(input);
  const exposure = input.rollout === undefined ? undefined : await rolloutOf(db, team, context, given.key, input.rollout);
  // An exposure to a rollout is no exposure to an experiment: it enrols only in one it names.
  const experiments = target ? [target] : exposure ? [] : context.running;
  return { job, team, input, given, event, target, experiments, running: context.running, variants: context.variants, chosen, value: carriedValue(input, event), exposure, rollouts: context.rolloutsById };
}





/**
 * The stored participants of the accepted ingests as the flush knows them, with their
 * enrolments, exclusions and conversions: those it read when it opened, and those of accepted
 * ingests it did not expect, read now.
 */
async function readParticipants(db: Db, statements: Ledger, admitted: Resolved[], expected: NamedParticipant[], stored: StoredParticipants): Promise<Map<string, ParticipantState>> {
  const lookedUp = new Set(expected.map((named) => participantKey(named.team, named.key)));
  const unread = new Map<string, NamedParticipant>();
  for (const unit of admitted) {
    const key = participantKey(unit.job.team.id, unit.given.key);
    if (!lookedUp.has(key)) unread.set(key, { team: unit.job.team.id, key: unit.given.key });
  }
  const states = statesOf(stored);
  if (unread.size > 0) for (const [key, state] of statesOf(await statements.participants(db, [...unread.values()]))) states.set(key, state);
  return states;
}
