import { Router } from 'express';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { ingestContexts } from './context';
import { ingest } from './service';

export function ingestRoutes(storage: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const contexts = ingestContexts();
  router.post('/', async (req, res) => {
    res.json({ data: await ingest(storage, contexts, teamOf(res), req.body) });
  });
  return router;
}
