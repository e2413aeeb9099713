import { Router } from 'express';
import { pathParam } from '../http/params';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { experimentResults } from './service';

export function resultRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });

  router.get('/', async (req, res) => {
    const historyEvent = typeof req.query.history_event === 'string' ? req.query.history_event : undefined;
    res.json({ data: await experimentResults(db, teamOf(res), pathParam(req, 'experiment'), historyEvent) });
  });

  return router;
}
