import type { Principal } from '../auth/principal';
import { Forbidden, NotFound } from '../http/errors';
import type { Db } from '../storage/database';
import { findTeam, findTeamOfUser, type TeamRow } from './store';

/**
 * How an operation treats a team the credential does not reach: everywhere it is 404, as if
 * it did not exist; the config, which SDKs call with ingest keys, answers 403.
 */
export type TeamAccess = 'member' | 'config';

export async function requireTeam(db: Db, principal: Principal, teamId: number, access: TeamAccess = 'member'): Promise<TeamRow> {
  // An ingest key's own team was read with the key, in the same request.
  if (principal.kind === 'ingest-key' && principal.team.id === teamId) return principal.team;
  const found = principal.kind === 'user' ? await findTeamOfUser(db, teamId, principal.userId) : { team: await findTeam(db, teamId), member: false };
  if (!found?.team) throw teamNotFound(teamId);
  if (found.member) return found.team;
  if (access === 'config') throw new Forbidden(`This credential does not reach team ${teamId}.`);
  throw teamNotFound(teamId);
}

function teamNotFound(teamId: number): NotFound {
  return new NotFound(`No team ${teamId}.`);
}
