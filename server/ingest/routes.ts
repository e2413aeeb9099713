import { Router } from 'express';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import type { IngestContexts } from './context';
import type { components } from '../../generated/api';
import { ingest, ingestBatch } from './service';

type IngestBatchRequest = components['schemas']['IngestBatchRequest'];

export function ingestRoutes(storage: Storage, contexts: IngestContexts): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.post('/', async (req, res) => {
    res.json({ data: await ingest(storage, contexts, teamOf(res), req.body) });
  });
  router.post('/batch', async (req, res) => {
    res.json({ data: await ingestBatch(storage, contexts, teamOf(res), (req.body as IngestBatchRequest).items) });
  });
  return router;
}
