import { Router } from 'express';
import type { Storage } from '../storage/database';
import { loadTeam, teamOf } from '../teams/middleware';
import { currentConfig, teamConfigs } from './service';

export function configRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const configs = teamConfigs();
  // A credential of another team is told 403 here, not 404: SDKs need to know their key is wrong.
  router.get('/', loadTeam(db, 'config'), async (req, res) => {
    const team = teamOf(res);
    const etag = `"${team.id}.${team.config_version}"`;
    res.set('ETag', etag);
    if (matchesAny(req.get('If-None-Match'), etag)) {
      res.status(304).end();
      return;
    }
    res.json({ data: await currentConfig(db, configs, team) });
  });
  return router;
}

/** Whether an If-None-Match header names the entity tag (weak comparison, as RFC 9110 asks for If-None-Match). */
function matchesAny(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}
