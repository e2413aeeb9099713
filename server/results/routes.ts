import { Router } from 'express';
import { pathParam } from '../routes/params';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { experimentResults } from './service';

export function resultRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });

  router.get('/', async (req, res) => {
    const { events, history_event: historyEvent, history_days: historyDays } = req.query;
    res.json({
      data: await experimentResults(db, teamOf(res), pathParam(req, 'experiment'), {
        events: Array.isArray(events) ? events.map(String) : typeof events === 'string' ? events.split(',') : undefined,
        historyEvent: typeof historyEvent === 'string' ? historyEvent : undefined,
        historyDays: historyDays === undefined ? undefined : Number(historyDays),
      }),
    });
  });

  return router;
}
