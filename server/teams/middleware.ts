import type { RequestHandler, Response } from 'express';
import { principalOf } from '../auth/principal';
import type { Db } from '../storage/database';
import { requireTeam, type TeamAccess } from './access';
import type { TeamRow } from './store';

/** Loads the `{team}` of the path for the routes below it, or answers 404 (403 for config). */
export function loadTeam(db: Db, access: TeamAccess = 'member'): RequestHandler {
  return async (req, res, next) => {
    res.locals.team = await requireTeam(db, principalOf(res), Number(req.params.team), access);
    next();
  };
}

export function teamOf(res: Response): TeamRow {
  return res.locals.team as TeamRow;
}
