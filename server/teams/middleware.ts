import type { RequestHandler, Response } from 'express';
import { principalOf } from '../auth/principal';
import { BadRequest } from '../http/errors';
import type { Db } from '../storage/database';
import { requireTeam, type TeamAccess } from './access';
import type { TeamRow } from './store';

/** Loads the `{team}` of the path for the routes below it, or answers 404 (403 for config). */
export function loadTeam(db: Db, access: TeamAccess = 'member'): RequestHandler {
  return async (req, res, next) => {
    res.locals.team = await requireTeam(db, principalOf(res), teamIdOf(req.params.team), access);
    next();
  };
}

/**
 * `{team}` as an id. The validator coerces it, and lets `Infinity` and `1e400` through as
 * integers (Ajv's coercion to Infinity skips the bounds): without this they reach the query,
 * where PostgreSQL rejects them (500). Like any other non-integer, they are a 400.
 */
export function teamIdOf(raw: unknown): number {
  const id = typeof raw === 'string' ? Number(raw) : NaN;
  if (Number.isSafeInteger(id) && id >= 1) return id;
  const message = `must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}`;
  throw new BadRequest(`/path/team ${message}`, [{ path: '/path/team', message }]);
}

export function teamOf(res: Response): TeamRow {
  return res.locals.team as TeamRow;
}
