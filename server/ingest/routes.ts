import { Router } from 'express';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { ingest } from './service';

export function ingestRoutes(storage: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.post('/', async (req, res) => {
    res.json({ data: await ingest(storage, teamOf(res), req.body) });
  });
  return router;
}
