import { Router } from 'express';
import type { Storage } from '../storage/database';
import { loadTeam, teamOf } from '../teams/middleware';
import { ConfigCache } from './cache';
import { teamConfig } from './service';

export function configRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const cache = new ConfigCache();
  // A credential of another team is told 403 here, not 404: SDKs need to know their key is wrong.
  router.get('/', loadTeam(db, 'config'), async (_req, res) => {
    const team = teamOf(res);
    let config = cache.get(team);
    if (!config) {
      config = await teamConfig(db, team);
      cache.set(team, config);
    }
    res.json({ data: config });
  });
  return router;
}
