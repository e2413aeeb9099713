import type { Db } from '../storage/database';
import type { LedgerChange, Withdrawal } from './change';

/**
 * The rows a change removes or excludes, in statements both engines share: for each participant,
 * its withdrawn enrolments' conversions and covariates and the enrolments themselves, each delete found through
 * the (team_id, participant_id, experiment_id) key; then its exclusions. A change of an
 * unenrolment or a deletion names one participant.
 */
export async function writeWithdrawals(db: Db, { withdrawals, exclusions }: LedgerChange): Promise<void> {
  for (const withdrawn of byParticipant(withdrawals).values()) {
    const { teamId, participantId } = withdrawn[0]!;
    const experimentIds = withdrawn.map((withdrawal) => withdrawal.experimentId);
    await db.deleteFrom('conversions').where('team_id', '=', teamId).where('participant_id', '=', participantId).where('experiment_id', 'in', experimentIds).execute();
    await db.deleteFrom('enrolment_covariates').where('team_id', '=', teamId).where('participant_id', '=', participantId).where('experiment_id', 'in', experimentIds).execute();
    await db.deleteFrom('enrolments').where('team_id', '=', teamId).where('participant_id', '=', participantId).where('experiment_id', 'in', experimentIds).execute();
  }
  if (exclusions.length > 0) {
    await db
      .insertInto('exclusions')
      .values(exclusions.map((exclusion) => ({ team_id: exclusion.teamId, participant_id: exclusion.participantId, experiment_id: exclusion.experimentId })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

function byParticipant(withdrawals: Withdrawal[]): Map<string, Withdrawal[]> {
  const groups = new Map<string, Withdrawal[]>();
  for (const withdrawal of withdrawals) {
    const key = `${withdrawal.teamId}:${withdrawal.participantId}`;
    groups.set(key, [...(groups.get(key) ?? []), withdrawal]);
  }
  return groups;
}
