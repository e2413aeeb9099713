import { Router } from 'express';
import type { Storage } from '../storage/database';
import { loadTeam, teamOf } from '../teams/middleware';
import { ConfigVersionCache } from './cache';
import { teamConfig, type Config } from './service';

export function configRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const cache = new ConfigVersionCache<Config>();
  // A credential of another team is told 403 here, not 404: SDKs need to know their key is wrong.
  router.get('/', loadTeam(db, 'config'), async (_req, res) => {
    const team = teamOf(res);
    let config = cache.get(team.id, team.config_version);
    if (!config) {
      config = await teamConfig(db, team);
      cache.set(team.id, team.config_version, config);
    }
    res.json({ data: config });
  });
  return router;
}
