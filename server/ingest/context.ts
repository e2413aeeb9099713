import { ConfigVersionCache } from '../config/cache';
import { requireEvent } from '../events/service';
import type { EventRow } from '../events/store';
import { requireExperiment } from '../experiments/service';
import type { ExperimentRow } from '../experiments/store';
import { HttpError } from '../http/errors';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { runningWithVariants, variantsOfMany, type ResolvedVariant } from '../variants/store';

/**
 * What an ingest reads of its team's config at one config version: the running experiments and
 * the variants of every experiment looked up so far, and each event or experiment key looked up
 * so far — found, or the 404 it answered. Every change to these raises the version, so a key that
 * was not found stays not found for as long as the context is used: an ingest refused for naming
 * it costs no query after the first.
 */
export interface IngestContext {
  running: ExperimentRow[];
  variants: Map<number, ResolvedVariant[]>;
  events: Map<string, EventRow | HttpError>;
  /** Experiments that are not running (stopped, draft) or not found, by key. */
  others: Map<string, ExperimentRow | HttpError>;
}

export type IngestContexts = ConfigVersionCache<IngestContext>;

export function ingestContexts(): IngestContexts {
  return new ConfigVersionCache<IngestContext>();
}

/**
 * The team's context at the config version the ingest's own transaction has read, so that its
 * writes never act on experiments or events a committed change has removed.
 */
export async function contextAt(trx: Db, contexts: IngestContexts, team: TeamRow, version: number): Promise<IngestContext> {
  let context = contexts.get(team.id, version);
  if (!context) {
    context = { ...(await runningWithVariants(trx, team.id)), events: new Map(), others: new Map() };
    contexts.set(team.id, version, context);
  }
  return context;
}

/** The event by key, looked up once per config version (renaming or deleting an event raises it); 404 if none. */
export async function eventOf(trx: Db, team: TeamRow, context: IngestContext, key: string): Promise<EventRow> {
  return lookedUp(context.events, key, () => requireEvent(trx, team, key));
}

/** The named experiment: a running one from the context, any other looked up once per config version (404 if none). */
export async function experimentOf(trx: Db, team: TeamRow, context: IngestContext, key: string): Promise<ExperimentRow> {
  return context.running.find((experiment) => experiment.key === key) ?? lookedUp(context.others, key, () => requireExperiment(trx, team, key));
}

/** What `lookup` found for `key` — or the HTTP error (a 404) it was refused with, thrown again — remembered in `seen`. */
async function lookedUp<T>(seen: Map<string, T | HttpError>, key: string, lookup: () => Promise<T>): Promise<T> {
  let found = seen.get(key);
  if (found === undefined) {
    const settled: T | HttpError = await lookup().catch((error: unknown) => (error instanceof HttpError ? error : Promise.reject(error)));
    seen.set(key, settled);
    found = settled;
  }
  if (found instanceof HttpError) throw found;
  return found as T;
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
