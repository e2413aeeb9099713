import { Router } from 'express';
import { changeOf } from '../audit/routes';
import { paginated, pageRequest } from '../routes/pagination';
import { pathParam } from '../routes/params';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import * as service from './service';
import { variantStatistics } from './statistics';

export function variantRoutes({ db }: Storage): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });

  router.get('/', async (req, res) => {
    const page = pageRequest(req);
    const { items, total } = await service.listVariants(db, teamOf(res), pathParam(req, 'experiment'), page);
    res.json(paginated(req, items, total, page));
  });

  router.post('/', async (req, res) => {
    res.json({ data: await service.createVariant(db, teamOf(res), pathParam(req, 'experiment'), req.body, changeOf(res)) });
  });

  router.get('/:variant', async (req, res) => {
    res.json({ data: await service.getVariant(db, teamOf(res), pathParam(req, 'experiment'), req.params.variant) });
  });

  router.put('/:variant', async (req, res) => {
    res.json({ data: await service.updateVariant(db, teamOf(res), pathParam(req, 'experiment'), req.params.variant, req.body, changeOf(res)) });
  });

  router.delete('/:variant', async (req, res) => {
    res.json({ data: await service.deleteVariant(db, teamOf(res), pathParam(req, 'experiment'), req.params.variant, changeOf(res)) });
  });

  router.get('/:variant/statistics', async (req, res) => {
    res.json({ data: await variantStatistics(db, teamOf(res), pathParam(req, 'experiment'), req.params.variant) });
  });

  return router;
}
