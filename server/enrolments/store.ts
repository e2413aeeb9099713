import type { components } from '../../generated/api';
import { sql } from 'kysely';
import { metricValue, sumChange } from '../domain/metric';
import type { Db } from '../storage/database';
import { exact } from '../storage/exact-sums';
import { prepared, type Bind } from '../storage/prepared';
import { iso, now, utcDay } from '../storage/values';

type Enrolment = components['schemas']['Enrolment'];

export interface EnrolmentRow {
  id: number;
  experiment_id: number;
  variant_id: number;
  experiment_key: string;
  status: 'draft' | 'running' | 'stopped';
  variant_key: string;
  enrolled_at: Date | string;
}

export function toEnrolment(row: EnrolmentRow): Enrolment {
  return { experiment: row.experiment_key, status: row.status, variant: row.variant_key, enrolled_at: iso(row.enrolled_at) };
}

function selectEnrolments(db: Db, teamId: number, participantId: number) {
  return db
    .selectFrom('enrolments')
    .innerJoin('experiments', 'experiments.id', 'enrolments.experiment_id')
    .innerJoin('variants', 'variants.id', 'enrolments.variant_id')
    .select([
      'enrolments.id',
      'enrolments.experiment_id',
      'enrolments.variant_id',
      'experiments.key as experiment_key',
      'experiments.status',
      'variants.key as variant_key',
      'enrolments.enrolled_at',
    ])
    .where('enrolments.team_id', '=', teamId)
    .where('enrolments.participant_id', '=', participantId);
}

export async function enrolmentsOf(db: Db, teamId: number, participantId: number, page?: { limit: number; offset: number }): Promise<EnrolmentRow[]> {
  return enrolmentsInOrder(db, { teamId, participantId, limit: page?.limit ?? 0, offset: page?.offset ?? 0 }, page ? 'page' : 'all');
}

// Ingest reads a returning participant's enrolments.
const enrolmentsInOrder = prepared((db, arg: Bind<{ teamId: number; participantId: number; limit: number; offset: number }>, rows: 'page' | 'all') => {
  const all = selectEnrolments(db, arg((a) => a.teamId), arg((a) => a.participantId)).orderBy('enrolments.id');
  return rows === 'page' ? all.limit(arg((a) => a.limit)).offset(arg((a) => a.offset)) : all;
});

export async function countEnrolmentsOf(db: Db, teamId: number, participantId: number): Promise<number> {
  const row = await db
    .selectFrom('enrolments')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('team_id', '=', teamId)
    .where('participant_id', '=', participantId)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

export async function findEnrolment(db: Db, teamId: number, participantId: number, experimentId: number): Promise<EnrolmentRow | undefined> {
  return selectEnrolments(db, teamId, participantId).where('enrolments.experiment_id', '=', experimentId).executeTakeFirst();
}

interface ParticipantChange {
  teamId: number;
  variantIds: number[];
  change: 1 | -1;
  day: string;
}

const addToParticipants = prepared((db, arg: Bind<ParticipantChange>, rows: number) =>
  db
    .updateTable('variants')
    .set((eb) => ({ participants: eb('participants', '+', arg((a) => a.change)) }))
    .where(
      'id',
      'in',
      Array.from({ length: rows }, (_, i) => arg((a) => a.variantIds[i]!)),
    )
    .where('team_id', '=', arg((a) => a.teamId)),
);

const addToDailyParticipants = prepared((db, arg: Bind<ParticipantChange>, rows: number) =>
  db
    .insertInto('daily_variant_counts')
    .values(
      Array.from({ length: rows }, (_, i) => ({
        team_id: arg((a) => a.teamId),
        variant_id: arg((a) => a.variantIds[i]!),
        day: arg((a) => a.day),
        participants: arg((a) => a.change),
      })),
    )
    .onConflict((oc) => oc.columns(['team_id', 'variant_id', 'day']).doUpdateSet((eb) => ({ participants: eb('daily_variant_counts.participants', '+', eb.ref('excluded.participants')) }))),
);

/** Adds one participant to each variant's counter (one variant per experiment), or takes one away, and to that day's roll-up: two statements. */
async function countParticipants(db: Db, teamId: number, variantIds: number[], change: 1 | -1, day: string): Promise<void> {
  if (variantIds.length === 0) return;
  const args = { teamId, variantIds, change, day };
  await addToParticipants(db, args, variantIds.length);
  await addToDailyParticipants(db, args, variantIds.length);
}

/**
 * Removes enrolments of one participant and takes them and their conversions out of the
 * counters. The caller holds the team's write lock (PostgreSQL: its advisory lock, taken first
 * by every writer of the team's counters; SQLite: the one writer), so no ingest flush runs meanwhile.
 */
export async function removeEnrolments(db: Db, teamId: number, participantId: number, removed: EnrolmentRow[]): Promise<void> {
  if (removed.length === 0) return;
  const experimentIds = removed.map((enrolment) => enrolment.experiment_id);
  const variantOf = new Map(removed.map((enrolment) => [enrolment.experiment_id, enrolment.variant_id]));
  // Taken out of the roll-up on the day they leave: the history up to then stays as it was seen.
  const today = utcDay(now());
  await countParticipants(db, teamId, removed.map((enrolment) => enrolment.variant_id), -1, today);
  const conversions = await db
    .selectFrom('conversions')
    .innerJoin('events', 'events.id', 'conversions.event_id')
    .select(['conversions.experiment_id', 'conversions.event_id', 'conversions.count', 'conversions.value', 'events.type', 'events.cap'])
    .where('conversions.team_id', '=', teamId)
    .where('conversions.participant_id', '=', participantId)
    .where('conversions.experiment_id', 'in', experimentIds)
    .orderBy('conversions.experiment_id')
    .orderBy('conversions.event_id')
    .execute();
  for (const conversion of conversions) {
    // The participant's y leaves Σy and Σy² (y → 0).
    const change = sumChange(metricValue(conversion, { count: Number(conversion.count), value: exact(conversion.value) }), 0n);
    const sumY = sql<string>`exact_add(sum_y, ${change.y.toString()})`;
    const sumY2 = sql<string>`exact_add(sum_y2, ${change.y2.toString()})`;
    await db
      .updateTable('variant_event_counts')
      .set((eb) => ({
        conversions: eb('conversions', '-', conversion.count),
        unique_conversions: eb('unique_conversions', '-', 1),
        sum_y: sumY,
        sum_y2: sumY2,
      }))
      .where('team_id', '=', teamId)
      .where('variant_id', '=', variantOf.get(conversion.experiment_id)!)
      .where('event_id', '=', conversion.event_id)
      .execute();
    await db
      .insertInto('daily_variant_event_counts')
      .values({
        team_id: teamId,
        variant_id: variantOf.get(conversion.experiment_id)!,
        event_id: conversion.event_id,
        day: today,
        conversions: -conversion.count,
        unique_conversions: -1,
        sum_y: change.y.toString(),
        sum_y2: change.y2.toString(),
      })
      .onConflict((oc) =>
        oc.columns(['team_id', 'variant_id', 'event_id', 'day']).doUpdateSet((eb) => ({
          conversions: eb('daily_variant_event_counts.conversions', '+', eb.ref('excluded.conversions')),
          unique_conversions: eb('daily_variant_event_counts.unique_conversions', '-', 1),
          sum_y: sql<string>`exact_add(daily_variant_event_counts.sum_y, excluded.sum_y)`,
          sum_y2: sql<string>`exact_add(daily_variant_event_counts.sum_y2, excluded.sum_y2)`,
        })),
      )
      .execute();
  }
  await db
    .deleteFrom('conversions')
    .where('team_id', '=', teamId)
    .where('participant_id', '=', participantId)
    .where('experiment_id', 'in', experimentIds)
    .execute();
  await db.deleteFrom('enrolments').where('team_id', '=', teamId).where('participant_id', '=', participantId).where('experiment_id', 'in', experimentIds).execute();
}

/**
 * Withdraws an enrolment by intention to treat: its rows (the enrolment and its conversions) go,
 * the counters and their roll-up keep what it contributed. The caller holds the team's write lock.
 */
export async function withdrawEnrolment(db: Db, teamId: number, participantId: number, enrolment: EnrolmentRow): Promise<void> {
  await db.deleteFrom('conversions').where('team_id', '=', teamId).where('participant_id', '=', participantId).where('experiment_id', '=', enrolment.experiment_id).execute();
  await db.deleteFrom('enrolments').where('team_id', '=', teamId).where('participant_id', '=', participantId).where('experiment_id', '=', enrolment.experiment_id).execute();
}

export async function exclude(db: Db, teamId: number, participantId: number, experimentId: number): Promise<void> {
  await db
    .insertInto('exclusions')
    .values({ team_id: teamId, participant_id: participantId, experiment_id: experimentId })
    .onConflict((oc) => oc.doNothing())
    .execute();
}
