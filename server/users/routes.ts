import { Router } from 'express';
import { principalOf } from '../auth/principal';
import { includeOf } from '../routes/include';
import { paginated, pageRequest } from '../routes/pagination';
import type { Storage } from '../storage/database';
import { roleOf, teamOf } from '../teams/middleware';
import type { TeamSort } from '../teams/store';
import { describeTeam, getCurrentTeam, getUser, listTeams, type Include } from './service';

/** Operations that only API tokens reach, so the principal is a user. */
function userOf(res: Parameters<typeof principalOf>[0]): { userId: number; readOnly: boolean } {
  const principal = principalOf(res);
  if (principal.kind !== 'user') throw new Error('user operation reached with an ingest key');
  return principal;
}

export function userRoutes({ db }: Storage): Router {
  const router = Router({ caseSensitive: true });
  router.get('/user', async (_req, res) => {
    res.json({ data: await getUser(db, userOf(res).userId) });
  });
  router.get('/current-team', async (_req, res) => {
    res.json({ data: await getCurrentTeam(db, userOf(res)) });
  });
  router.get('/teams', async (req, res) => {
    const page = pageRequest(req);
    const sort = (req.query.sort ?? 'id') as TeamSort;
    const { items, total } = await listTeams(db, userOf(res), sort, includeOf(req) as Include[], page);
    res.json(paginated(req, items, total, page));
  });
  return router;
}

export function teamRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.get('/', async (req, res) => {
    res.json({ data: await describeTeam(db, teamOf(res), includeOf(req) as Include[], roleOf(res)) });
  });
  return router;
}
