import type { MetricType } from '../../domain/metric';
import type { EnrolmentRow } from '../enrolments/store';
import { quotaMonth } from '../teams/quota';
import type { ParticipantRow } from '../storage/schema';
import type { Db } from '../storage/database';
import { exact } from '../storage/exact-sums';
import { now } from '../storage/values';
import { emptyChange, NO_CONVERSIONS, participantState, type LedgerChange, type ParticipantState } from './change';
import type { Ledger } from './port';

/** A stored conversion of a participant, with its event's metric. */
export interface StoredConversion {
  experiment_id: number;
  event_id: number;
  count: number | string;
  value: string | number;
  type: MetricType;
  cap: number | null;
}

type Removed = Pick<EnrolmentRow, 'experiment_id' | 'variant_id'>;
/** A stored participant, as a removal names it. */
type Stored = Pick<ParticipantRow, 'id' | 'team_id'>;

/** An enrolment's stored covariate of an event (enrolment_covariates). */
export interface StoredCovariate {
  experiment_id: number;
  event_id: number;
  x: string | number;
}

/**
 * A participant's enrolments removed, with their conversions and covariates, and taken back from
 * the counters: a participant each fewer in their variants, its covariates' x and x² out of Σx
 * and Σx², and each conversion's y back to nothing (Σxy by x times that). Taken out of the
 * roll-up on the day they leave (`at`): the history up to then stays as it was seen.
 */
export function removal(at: string, participant: Stored, removed: Removed[], conversions: StoredConversion[], covariates: StoredCovariate[] = []): LedgerChange {
  const change = emptyChange(at, quotaMonth(at), at);
  const state = stateOf(participant, at);
  const variantOf = new Map(removed.map((enrolment) => [enrolment.experiment_id, enrolment.variant_id]));
  const xOf = new Map(covariates.map((c) => [`${c.experiment_id}:${c.event_id}`, exact(c.x)]));
  for (const enrolment of removed) {
    const frozen = covariates.filter((c) => c.experiment_id === enrolment.experiment_id).map((c) => ({ eventId: c.event_id, x: exact(c.x) }));
    change.withdrawals.push({ teamId: participant.team_id, participantId: participant.id, experimentId: enrolment.experiment_id, variantId: enrolment.variant_id, takenBack: true, covariates: frozen });
  }
  for (const conversion of conversions) {
    const variantId = variantOf.get(conversion.experiment_id);
    if (variantId === undefined) continue;
    const before = { count: Number(conversion.count), value: exact(conversion.value) };
    change.conversions.set(`${conversion.experiment_id}:${conversion.event_id}`, {
      state,
      teamId: participant.team_id,
      experimentId: conversion.experiment_id,
      eventId: conversion.event_id,
      variantId,
      metric: conversion,
      before,
      after: NO_CONVERSIONS,
      x: xOf.get(`${conversion.experiment_id}:${conversion.event_id}`) ?? 0n,
    });
  }
  return change;
}

/**
 * An enrolment withdrawn by intention to treat: its rows (the enrolment and its conversions) go,
 * the counters and their roll-up keep what it contributed; `excluded`: and the participant never
 * enters the experiment again.
 */
export function withdrawal(at: string, participant: Stored, enrolment: Removed, excluded: boolean): LedgerChange {
  const change = emptyChange(at, quotaMonth(at), at);
  const ids = { teamId: participant.team_id, participantId: participant.id, experimentId: enrolment.experiment_id };
  change.withdrawals.push({ ...ids, variantId: enrolment.variant_id, takenBack: false, covariates: [] });
  if (excluded) change.exclusions.push(ids);
  return change;
}

/** The participant's conversions in these experiments, with their events' metrics. */
export async function conversionsIn(db: Db, participant: Stored, experimentIds: number[]): Promise<StoredConversion[]> {
  if (experimentIds.length === 0) return [];
  return db
    .selectFrom('conversions')
    .innerJoin('events', 'events.id', 'conversions.event_id')
    .select(['conversions.experiment_id', 'conversions.event_id', 'conversions.count', 'conversions.value', 'events.type', 'events.cap'])
    .where('conversions.team_id', '=', participant.team_id)
    .where('conversions.participant_id', '=', participant.id)
    .where('conversions.experiment_id', 'in', experimentIds)
    .orderBy('conversions.experiment_id')
    .orderBy('conversions.event_id')
    .execute();
}

/** The participant's covariates in these experiments. */
export async function covariatesIn(db: Db, participant: Stored, experimentIds: number[]): Promise<StoredCovariate[]> {
  if (experimentIds.length === 0) return [];
  return db
    .selectFrom('enrolment_covariates')
    .select(['experiment_id', 'event_id', 'x'])
    .where('team_id', '=', participant.team_id)
    .where('participant_id', '=', participant.id)
    .where('experiment_id', 'in', experimentIds)
    .execute();
}

/**
 * Removes a participant's enrolments and takes them and their conversions out of the counters.
 * The caller holds the team's write lock (PostgreSQL: its advisory lock, taken first by every
 * writer of the team's counters; SQLite: the one writer), so no ingest flush runs meanwhile.
 */
export async function removeEnrolments(ledger: Ledger, db: Db, participant: Stored, removed: Removed[]): Promise<void> {
  if (removed.length === 0) return;
  const experimentIds = removed.map((enrolment) => enrolment.experiment_id);
  const [conversions, covariates] = [await conversionsIn(db, participant, experimentIds), await covariatesIn(db, participant, experimentIds)];
  await ledger.write(db, removal(now(), participant, removed, conversions, covariates));
}

/** Withdraws an enrolment by intention to treat (withdrawal). The caller holds the team's write lock. */
export async function withdrawEnrolment(ledger: Ledger, db: Db, participant: Stored, enrolment: Removed, excluded = false): Promise<void> {
  await ledger.write(db, withdrawal(now(), participant, enrolment, excluded));
}

/** The participant as its conversions name it: by its id (a removal writes nothing else of its row). */
function stateOf({ id, team_id }: Stored, at: string): ParticipantState {
  return participantState({ id, team_id, key: '', notes: null, attributes: '{}', created_at: at, updated_at: at }, false);
}
