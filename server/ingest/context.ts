import { ConfigVersionCache } from '../config/cache';
import { requireEvent } from '../events/service';
import type { EventRow } from '../events/store';
import { requireExperiment } from '../experiments/service';
import type { ExperimentRow } from '../experiments/store';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { runningWithVariants, type ResolvedVariant } from '../variants/store';

/** What an ingest reads of its team's config: the running experiments, their variants, the events found so far. */
export interface IngestContext {
  running: ExperimentRow[];
  variants: Map<number, ResolvedVariant[]>;
  events: Map<string, EventRow>;
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
    context = { ...(await runningWithVariants(trx, team.id)), events: new Map() };
    contexts.set(team.id, version, context);
  }
  return context;
}

/** The event by key, looked up once per config version (renaming or deleting an event raises it); 404 if none. */
export async function eventOf(trx: Db, team: TeamRow, context: IngestContext, key: string): Promise<EventRow> {
  let event = context.events.get(key);
  if (!event) {
    event = await requireEvent(trx, team, key);
    context.events.set(key, event);
  }
  return event;
}

/** The named experiment: a running one from the context, any other read (404 if none). */
export async function experimentOf(trx: Db, team: TeamRow, context: IngestContext, key: string): Promise<ExperimentRow> {
  return context.running.find((experiment) => experiment.key === key) ?? requireExperiment(trx, team, key);
}
