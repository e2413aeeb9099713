import { Router } from 'express';
import type { Storage } from '../storage/database';
import { loadTeam, teamOf } from '../teams/middleware';
import { teamConfig } from './service';

export function configRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  // A credential of another team is told 403 here, not 404: SDKs need to know their key is wrong.
  router.get('/', loadTeam(db, 'config'), async (_req, res) => {
    res.json({ data: await teamConfig(db, teamOf(res)) });
  });
  return router;
}
