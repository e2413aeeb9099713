import type { RequestHandler, Response } from 'express';
import { principalOf } from '../auth/principal';
import { BadRequest } from '../http/errors';
import type { Db } from '../storage/database';
import { requireMember, type TeamAccess } from './access';
import { operationOf } from '../contract/routing';
import type { MemberRole } from '../../domain/member-roles';
import type { TeamRow } from './store';

/**
 * Loads the `{team}` of the path for the routes below it, or answers 404 (403 for config), and
 * 403 when the caller's role there is below the operation's `x-role`.
 */
export function loadTeam(db: Db, access: TeamAccess = 'member'): RequestHandler {
  return async (req, res, next) => {
    const { team, role } = await requireMember(db, principalOf(res), teamIdOf(req.params.team), access, operationOf(res).role);
    res.locals.team = team;
    res.locals.role = role;
    next();
  };
}

/** The role the caller's API token acts with in the path's team; undefined for an ingest key. */
export function roleOf(res: Response): MemberRole | undefined {
  return res.locals.role as MemberRole | undefined;
}

/**
 * `{team}` as an id: a plain decimal number and nothing else. The validator coerces the segment
 * with Number(), which also reads `0x1`, `1.0`, `1e0` and ` 1` as 1, and lets `Infinity` and
 * `1e400` through as integers: an id written any other way is a 400, never another team's.
 */
export function teamIdOf(raw: unknown): number {
  const id = typeof raw === 'string' && /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : NaN;
  if (Number.isSafeInteger(id)) return id;
  const message = `must be a decimal integer from 1 to ${Number.MAX_SAFE_INTEGER}`;
  throw new BadRequest(`/path/team ${message}`, [{ path: '/path/team', message }]);
}

export function teamOf(res: Response): TeamRow {
  return res.locals.team as TeamRow;
}
