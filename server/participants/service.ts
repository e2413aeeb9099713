import type { components } from '../../generated/api';
import { record, type Change } from '../audit/service';
import * as enrolments from '../enrolments/store';
import { ledgerOf } from '../ledger/engines';
import { removeEnrolments, withdrawEnrolment } from '../ledger/removals';
import { requireExperiment } from '../experiments/service';
import { Conflict, NotFound } from '../http/errors';
import type { PageRequest } from '../routes/pagination';
import type { Db, Storage } from '../storage/database';
import { countInTeam } from '../storage/counts';
import { now, onDuplicate } from '../storage/values';
import { teamWrite } from '../storage/team-lock';
import type { TeamRow } from '../teams/store';
import * as store from './store';

type Participant = components['schemas']['Participant'];
type ParticipantDetail = components['schemas']['ParticipantDetail'];
type ParticipantCreate = components['schemas']['ParticipantCreate'];
type ParticipantUpdate = components['schemas']['ParticipantUpdate'];
type Enrolment = components['schemas']['Enrolment'];

async function requireParticipant(db: Db, team: TeamRow, key: string): Promise<store.ParticipantRow> {
  const participant = await store.findParticipant(db, team.id, key);
  if (!participant) throw new NotFound(`No participant '${key}' in team ${team.id}.`);
  return participant;
}

/**
 * The participant, locked for the rest of the transaction — before its enrolments and
 * conversions are read, so that a concurrent ingest of it cannot slip in between.
 */
async function lockedParticipant(trx: Db, team: TeamRow, key: string): Promise<store.ParticipantRow> {
  const found = await requireParticipant(trx, team, key);
  await store.lockParticipant(trx, found.id, team.id);
  const participant = await store.findParticipantById(trx, team.id, found.id);
  if (!participant) throw new NotFound(`No participant '${key}' in team ${team.id}.`);
  return participant;
}

export async function listParticipants(db: Db, team: TeamRow, page: PageRequest) {
  const [rows, total] = await Promise.all([
    store.listParticipants(db, team.id, page.perPage, page.offset),
    countInTeam(db, 'participants', team.id),
  ]);
  return { items: rows.map(store.toParticipant), total };
}

/** The participant with one page of its enrolments; `total` counts the enrolments. */
export async function getParticipant(db: Db, team: TeamRow, key: string, page: PageRequest): Promise<{ detail: ParticipantDetail; total: number }> {
  const participant = await requireParticipant(db, team, key);
  const [rows, total] = await Promise.all([
    enrolments.enrolmentsOf(db, team.id, participant.id, { limit: page.perPage, offset: page.offset }),
    enrolments.countEnrolmentsOf(db, team.id, participant.id),
  ]);
  return { detail: { ...store.toParticipant(participant), experiments: rows.map(enrolments.toEnrolment) }, total };
}

// Under the team's lock, as ingest reads a team's participants under it (PostgreSQL): none appears or is renamed meanwhile.
export async function createParticipant(db: Db, team: TeamRow, input: ParticipantCreate, change: Change): Promise<Participant> {
  const row = await teamWrite(db, team.id, async (trx) => {
    const created = await onDuplicate(store.insertParticipant(trx, team.id, input, now()), () => duplicateKey(team, input.key));
    await record(trx, team.id, change, { resource: 'participant', key: created.key, action: 'created', before: null, after: store.toParticipant(created) });
    return created;
  });
  return store.toParticipant(row);
}

export async function updateParticipant(db: Db, team: TeamRow, key: string, input: ParticipantUpdate, change: Change): Promise<Participant> {
  const row = await teamWrite(db, team.id, async (trx) => {
    const participant = await requireParticipant(trx, team, key);
    const updated = await onDuplicate(store.updateParticipant(trx, participant.id, team.id, input, now()), () => duplicateKey(team, input.key ?? key));
    await record(trx, team.id, change, { resource: 'participant', key: updated.key, action: 'updated', before: store.toParticipant(participant), after: store.toParticipant(updated) });
    return updated;
  });
  return store.toParticipant(row);
}

// Deleting and unenrolling change the counters that ingest changes: like an ingest flush, they
// first take the team's write lock (the group commit's lock key), so they take turns with it in
// every process.
export async function deleteParticipant(storage: Storage, team: TeamRow, key: string, change: Change): Promise<Participant> {
  return storage.batched(async (trx) => {
    const participant = await lockedParticipant(trx, team, key);
    await removeEnrolments(ledgerOf(storage.engine), trx, participant, await enrolments.enrolmentsOf(trx, team.id, participant.id));
    await store.deleteParticipant(trx, participant.id, team.id);
    await record(trx, team.id, change, { resource: 'participant', key: participant.key, action: 'deleted', before: store.toParticipant(participant), after: null });
    return store.toParticipant(participant);
  }, team.id);
}

export async function listEnrolments(db: Db, team: TeamRow, key: string, page: PageRequest) {
  const participant = await requireParticipant(db, team, key);
  const [rows, total] = await Promise.all([
    enrolments.enrolmentsOf(db, team.id, participant.id, { limit: page.perPage, offset: page.offset }),
    enrolments.countEnrolmentsOf(db, team.id, participant.id),
  ]);
  return { items: rows.map(enrolments.toEnrolment), total };
}

export async function getEnrolment(db: Db, team: TeamRow, key: string, experimentKey: string): Promise<Enrolment> {
  const participant = await requireParticipant(db, team, key);
  const experiment = await requireExperiment(db, team, experimentKey);
  return enrolments.toEnrolment(await requireEnrolment(db, team, participant, experiment));
}

/** Withdraws for good, by intention to treat: what it contributed stays in the statistics, nothing later counts, and ingest never enrols it there again. */
export async function unenrol(storage: Storage, team: TeamRow, key: string, experimentKey: string, change: Change): Promise<Enrolment> {
  return storage.batched(async (trx) => {
    const participant = await lockedParticipant(trx, team, key);
    const experiment = await requireExperiment(trx, team, experimentKey);
    const enrolment = await requireEnrolment(trx, team, participant, experiment);
    await withdrawEnrolment(ledgerOf(storage.engine), trx, participant, enrolment, true);
    const before = enrolments.toEnrolment(enrolment);
    await record(trx, team.id, change, { resource: 'enrolment', key: `${participant.key}/${experiment.key}`, action: 'deleted', before, after: null });
    return before;
  }, team.id);
}

async function requireEnrolment(db: Db, team: TeamRow, participant: store.ParticipantRow, experiment: { id: number; key: string }) {
  const enrolment = await enrolments.findEnrolment(db, team.id, participant.id, experiment.id);
  if (!enrolment) throw new NotFound(`Participant '${participant.key}' is not enrolled in experiment '${experiment.key}'.`);
  return enrolment;
}

function duplicateKey(team: TeamRow, key: string): Conflict {
  return new Conflict(`Team ${team.id} already has a participant '${key}'.`);
}
