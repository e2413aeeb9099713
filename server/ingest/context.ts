import { ConfigVersionCache } from '../config/cache';
import { eventNotFound, requireEvent } from '../events/service';
import type { EventRow } from '../events/store';
import { experimentNotFound, requireExperiment } from '../experiments/service';
import type { ExperimentRow } from '../experiments/store';
import { Conflict, HttpError, NotFound } from '../http/errors';
import { rolloutArm, type RolloutArm } from '../../domain/rollout-arms';
import type { components } from '../../generated/api';
import type { CacheSettings } from '../settings/settings';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { findRolloutOfFlag, ingestRollouts, type IngestRollout } from '../rollouts/store';
import { runningWithVariants, variantsOfMany, type ResolvedVariant } from '../experiments/variants-store';
import { UnknownKeys, type UnknownKeysAt, type UnknownKind } from './unknown-keys';

type RolloutExposure = components['schemas']['IngestRolloutExposure'];

/**
 * What an ingest reads of its team's config at one config version: the running experiments and
 * the variants of every experiment looked up so far, and each event or experiment key looked up
 * so far — found, or not found (a 404). Every change to these raises the version, so a key that
 * was not found stays not found for as long as the context is used: an ingest refused for naming
 * it costs no query after the first. What was found is bounded by what a team may hold (200
 * events, 500 experiments); what was not found, by the process's memory of unknown keys.
 */
export interface IngestContext {
  running: ExperimentRow[];
  variants: Map<number, ResolvedVariant[]>;
  /** Events found, by key. */
  events: Map<string, EventRow>;
  /** Experiments found that are not running (stopped, draft), by key. */
  others: Map<string, ExperimentRow>;
  /** Keys looked up and not found. */
  unknown: UnknownKeysAt;
  /** The team's running and paused rollouts, by `<feature>/<number>` and by id. */
  rollouts: Map<string, IngestRollout>;
  rolloutsById: Map<number, IngestRollout>;
}

/** Each team's ingest context at its latest config version (at most `teams` of them), and the keys found unknown (at most `unknownKeys`). */
export class IngestContexts extends ConfigVersionCache<IngestContext> {
  readonly unknown: UnknownKeys;

  constructor({ teams, unknownKeys }: Partial<CacheSettings> = {}) {
    super(teams);
    this.unknown = new UnknownKeys(unknownKeys);
  }
}

export function ingestContexts(bounds?: Partial<CacheSettings>): IngestContexts {
  return new IngestContexts(bounds);
}

/**
 * The team's context at the config version the ingest's own transaction has read, so that its
 * writes never act on experiments or events a committed change has removed.
 */
export async function contextAt(trx: Db, contexts: IngestContexts, team: TeamRow, version: number): Promise<IngestContext> {
  let context = contexts.get(team.id, version);
  if (!context) {
    const rollouts = await ingestRollouts(trx, team.id);
    const rolloutsById = new Map([...rollouts.values()].map((rollout) => [rollout.id, rollout]));
    context = { ...(await runningWithVariants(trx, team.id)), events: new Map(), others: new Map(), unknown: contexts.unknown.of(team.id, version), rollouts, rolloutsById };
    contexts.set(team.id, version, context);
  }
  return context;
}

/** The event by key, looked up once per config version (renaming or deleting an event raises it); 404 if none. */
export async function eventOf(trx: Db, team: TeamRow, context: IngestContext, key: string): Promise<EventRow> {
  const found = context.events.get(key);
  if (found) return found;
  if (context.unknown.has('event', key)) throw eventNotFound(team, key);
  const event = await remembering(context, 'event', key, () => requireEvent(trx, team, key));
  context.events.set(key, event);
  return event;
}

/** The named experiment: a running one from the context, any other looked up once per config version (404 if none). */
export async function experimentOf(trx: Db, team: TeamRow, context: IngestContext, key: string): Promise<ExperimentRow> {
  const found = context.running.find((experiment) => experiment.key === key) ?? context.others.get(key);
  if (found) return found;
  if (context.unknown.has('experiment', key)) throw experimentNotFound(team, key);
  const experiment = await remembering(context, 'experiment', key, () => requireExperiment(trx, team, key));
  context.others.set(key, experiment);
  return experiment;
}

/** Whether the ingest's experiment is known not to be running at the context's version (not found, stopped or a draft). */
export function knownNotRunning(context: IngestContext, key: string): boolean {
  return context.others.has(key) || context.unknown.has('experiment', key);
}

/** What `lookup` found; when it is refused with an HTTP error (a 404), the key is remembered as unknown. */
async function remembering<T>(context: IngestContext, kind: UnknownKind, key: string, lookup: () => Promise<T>): Promise<T> {
  try {
    return await lookup();
  } catch (error) {
    if (error instanceof HttpError) context.unknown.add(kind, key);
    throw error;
  }
}

/** The variants of an experiment, read once per config version. */
export async function variantsIn(trx: Db, team: TeamRow, context: IngestContext, experiment: ExperimentRow): Promise<ResolvedVariant[]> {
  let variants = context.variants.get(experiment.id);
  if (!variants) {
    variants = (await variantsOfMany(trx, team.id, [experiment.id])).get(experiment.id) ?? [];
    context.variants.set(experiment.id, variants);
  }
  return variants;
}

/**
 * The rollout an ingest's `rollout` names, with the arm it is exposed in: 404 for an unknown
 * flag or rollout, 409 for one that is not running or paused, or whose hash does not place the
 * participant in the arm named at its current share.
 */
export async function rolloutOf(trx: Db, team: TeamRow, context: IngestContext, participant: string, named: RolloutExposure): Promise<{ rollout: IngestRollout; arm: RolloutArm }> {
  const rollout = context.rollouts.get(`${named.feature}/${named.number}`);
  if (!rollout) {
    const stored = await findRolloutOfFlag(trx, team.id, named.feature, named.number);
    if (!stored) throw new NotFound(`/body/rollout: no rollout ${named.number} of feature '${named.feature}' in team ${team.id}.`);
    throw new Conflict(`Rollout ${named.number} of feature '${named.feature}' is ${stored.state}; only a running or paused rollout records exposures (body.rollout).`);
  }
  if (rolloutArm(rollout.seed, participant, rollout.share) !== named.arm) {
    throw new Conflict(`/body/rollout/arm: rollout ${named.number} of feature '${named.feature}' does not place participant '${participant}' in the ${named.arm} arm at ${rollout.share} %.`);
  }
  return { rollout, arm: named.arm };
}
