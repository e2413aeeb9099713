import type { Router } from 'express';
import { changeOf } from '../audit/routes';
import { keyedRoutes } from '../routes/keyed-routes';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import * as service from './service';

export function experimentRoutes({ db }: Storage): Router {
  const router = keyedRoutes(db, 'experiment', {
    list: service.listExperiments,
    create: service.createExperiment,
    get: service.getExperiment,
    update: service.updateExperiment,
    remove: service.deleteExperiment,
  });
  router.post('/:experiment/start', async (req, res) => {
    res.json({ data: await service.startExperiment(db, teamOf(res), req.params.experiment, changeOf(res)) });
  });
  router.post('/:experiment/stop', async (req, res) => {
    res.json({ data: await service.stopExperiment(db, teamOf(res), req.params.experiment, changeOf(res)) });
  });
  return router;
}
