import { Router } from 'express';
import type { TeamConfigs } from '../config/service';
import type { Ingestion } from '../ingest/service';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { evaluate } from './service';

export function evaluateRoutes(storage: Storage, caches: { configs: TeamConfigs; ingestion: Ingestion }): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.post('/', async (req, res) => {
    res.json({ data: await evaluate(storage, caches, teamOf(res), req.body) });
  });
  return router;
}
