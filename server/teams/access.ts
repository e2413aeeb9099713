import type { Principal } from '../auth/principal';
import { Forbidden, NotFound } from '../http/errors';
import type { Db } from '../storage/database';
import { findTeam, isMember, type TeamRow } from './store';

/**
 * How an operation treats a team the credential does not reach: everywhere it is 404, as if
 * it did not exist; the config, which SDKs call with ingest keys, answers 403.
 */
export type TeamAccess = 'member' | 'config';

export async function requireTeam(db: Db, principal: Principal, teamId: number, access: TeamAccess = 'member'): Promise<TeamRow> {
  const team = await findTeam(db, teamId);
  if (!team) throw teamNotFound(teamId);
  if (await reaches(db, principal, team.id)) return team;
  if (access === 'config') throw new Forbidden(`This credential does not reach team ${teamId}.`);
  throw teamNotFound(teamId);
}

async function reaches(db: Db, principal: Principal, teamId: number): Promise<boolean> {
  return principal.kind === 'ingest-key' ? principal.teamId === teamId : isMember(db, teamId, principal.userId);
}

function teamNotFound(teamId: number): NotFound {
  return new NotFound(`No team ${teamId}.`);
}
