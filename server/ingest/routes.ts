import { Router } from 'express';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { ingest } from './service';

export function ingestRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.post('/', async (req, res) => {
    res.json({ data: await ingest(db, teamOf(res), req.body) });
  });
  return router;
}
