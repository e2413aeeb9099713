import { Router, type Request, type Response } from 'express';
import { principalOf } from '../auth/principal';
import { BadRequest } from '../http/errors';
import { loggedRequestOf } from '../http/request-log';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { listAuditLog, type Change, type ResourceType } from './service';

/** The change an API request makes: its user (from the token, never the token) and its request id. */
export function changeOf(res: Response): Change {
  const principal = principalOf(res);
  if (principal.kind !== 'user') throw new Error('Only API tokens change a team’s resources.');
  return { actor: { type: 'user', userId: principal.userId }, requestId: loggedRequestOf(res)?.requestId ?? null };
}

export function auditRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.get('/', async (req, res) => {
    const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
    // The validator passes `Infinity` and `1e400` as integers.
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100) throw new BadRequest('limit must be a whole number from 1 to 100.', [{ path: '/query/limit', message: 'must be an integer from 1 to 100' }]);
    const { entries, nextCursor } = await listAuditLog(db, teamOf(res).id, {
      cursor: req.query.cursor === undefined ? undefined : Number(req.query.cursor),
      limit,
      resourceType: text(req, 'resource_type') as ResourceType | undefined,
      resourceKey: text(req, 'resource_key'),
      actor: text(req, 'actor'),
      since: moment(req, 'since'),
      until: moment(req, 'until'),
    });
    res.json({ data: entries, meta: { limit, next_cursor: nextCursor }, links: { next: nextCursor === null ? null : nextLink(req, nextCursor) } });
  });
  return router;
}

function text(req: Request, name: string): string | undefined {
  const value = req.query[name];
  return typeof value === 'string' ? value : undefined;
}

/** An RFC 3339 moment (the validator checked its form) as stored timestamps are written, so text comparison on SQLite orders it right. */
function moment(req: Request, name: string): string | undefined {
  const value = text(req, name);
  return value === undefined ? undefined : new Date(value).toISOString();
}

function nextLink(req: Request, cursor: string): string {
  const url = new URL(req.originalUrl, 'http://localhost');
  url.searchParams.set('cursor', cursor);
  return url.pathname + url.search;
}
