import { actingRole, reaches, type MemberRole } from '../../domain/member-roles';
import type { Principal } from '../auth/principal';
import { Forbidden, HttpError, NotFound } from '../http/errors';
import type { Db } from '../storage/database';
import { findTeam, findTeamOfUser, type TeamRow } from './store';

/**
 * How an operation treats a team the credential does not reach: everywhere it is 404, as if
 * it did not exist; the config, which SDKs call with ingest keys, answers 403.
 */
export type TeamAccess = 'member' | 'config';

/** A team as a credential reaches it: the team, and the role an API token acts with in it (none for an ingest key). */
export interface Reached {
  team: TeamRow;
  role?: MemberRole;
}

/**
 * The team, when the credential reaches it with at least the `needed` role (403 naming it
 * otherwise). Ingest keys have no role: the operations they reach are those their security lists.
 */
export async function requireMember(db: Db, principal: Principal, teamId: number, access: TeamAccess = 'member', needed?: MemberRole): Promise<Reached> {
  // An ingest key's own team was read with the key, in the same request.
  if (principal.kind === 'ingest-key' && principal.team.id === teamId) return { team: principal.team };
  const found = principal.kind === 'user' ? await findTeamOfUser(db, teamId, principal.userId) : { team: await findTeam(db, teamId), role: undefined };
  if (!found?.team) throw teamNotFound(teamId);
  if (found.role !== undefined && principal.kind === 'user') {
    const role = actingRole(found.role, principal.readOnly);
    if (needed !== undefined && !reaches(role, needed)) throw new RoleRequired(needed, role, principal.readOnly);
    return { team: found.team, role };
  }
  if (access === 'config') throw new Forbidden(`This credential does not reach team ${teamId}.`);
  throw teamNotFound(teamId);
}

export async function requireTeam(db: Db, principal: Principal, teamId: number, access: TeamAccess = 'member', needed?: MemberRole): Promise<TeamRow> {
  return (await requireMember(db, principal, teamId, access, needed)).team;
}

function teamNotFound(teamId: number): NotFound {
  return new NotFound(`No team ${teamId}.`);
}

/** 403 naming the role the operation needs and the one the caller acts with. */
export class RoleRequired extends HttpError {
  constructor(needed: MemberRole, acting: MemberRole, readOnly: boolean) {
    const why = readOnly ? 'this API token is read-only (it acts as viewer)' : `this token's user is ${acting} in the team`;
    super(403, 'Forbidden', 'role-required', `This operation needs the ${needed} role; ${why}.`);
  }
}
