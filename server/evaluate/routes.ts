import { Router } from 'express';
import { teamConfigs } from '../config/service';
import { ingestContexts } from '../ingest/context';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import { evaluate } from './service';

export function evaluateRoutes(storage: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const caches = { configs: teamConfigs(), contexts: ingestContexts() };
  router.post('/', async (req, res) => {
    res.json({ data: await evaluate(storage, caches, teamOf(res), req.body) });
  });
  return router;
}
