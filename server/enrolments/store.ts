import type { components } from '../../generated/api';
import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';
import { iso } from '../storage/values';

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
