import { Router } from 'express';
import { teamOf } from '../teams/middleware';
import type { components } from '../../generated/api';
import { ingest, ingestBatch, type Ingestion } from './service';

type IngestBatchRequest = components['schemas']['IngestBatchRequest'];

export function ingestRoutes(ingestion: Ingestion): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  router.post('/', async (req, res) => {
    res.json({ data: await ingest(ingestion, teamOf(res), req.body) });
  });
  router.post('/batch', async (req, res) => {
    res.json({ data: await ingestBatch(ingestion, teamOf(res), (req.body as IngestBatchRequest).items) });
  });
  return router;
}
