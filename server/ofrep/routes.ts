import { Router } from 'express';
import { sha256 } from '#sha256';
import { matchesAny } from '../http/conditional';
import type { Storage } from '../storage/database';
import { loadTeam, teamOf } from '../teams/middleware';
import { eventStreamOf } from './event-stream';
import { evaluateAll, evaluateOne, type OfrepCaches } from './service';

/** OFREP's two evaluations under `/api/teams/{team}/ofrep/v1/evaluate` (a credential of another team is 403, as for the config). */
export function ofrepRoutes(storage: Storage, caches: OfrepCaches): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.use(loadTeam(storage.db, 'config'));
  router.post('/flags/:feature', async (req, res) => {
    res.json(await evaluateOne(storage, caches, teamOf(res), req.params.feature as string, req.body));
  });
  router.post('/flags', async (req, res) => {
    const team = teamOf(res);
    const answer = { ...(await evaluateAll(storage, caches.configs, team, req.body)), eventStreams: [eventStreamOf(team, Date.now())] };
    const etag = `"${Buffer.from(sha256(JSON.stringify(answer))).toString('base64url').slice(0, 22)}"`;
    res.set('ETag', etag);
    if (matchesAny(req.get('If-None-Match'), etag)) {
      res.status(304).end();
      return;
    }
    res.json(answer);
  });
  return router;
}
