import type { Router } from 'express';
import type { components } from '../../generated/api';
import { changeOf } from '../audit/routes';
import { keyedRoutes } from '../routes/keyed-routes';
import type { Storage } from '../storage/database';
import type { ConfigFits } from '../teams/limits';
import { teamOf } from '../teams/middleware';
import * as service from './service';

type ExperimentUpdate = components['schemas']['ExperimentUpdate'];

export function experimentRoutes({ db }: Storage, requireConfigFits: ConfigFits): Router {
  const router = keyedRoutes(db, 'experiment', {
    list: service.listExperiments,
    create: service.createExperiment,
    get: service.getExperiment,
    update: (db, team, key, input: ExperimentUpdate, change) => service.updateExperiment(db, team, key, input, change, requireConfigFits),
    remove: service.deleteExperiment,
  });
  router.post('/:experiment/start', async (req, res) => {
    res.json({ data: await service.startExperiment(db, teamOf(res), req.params.experiment, changeOf(res), requireConfigFits) });
  });
  router.post('/:experiment/stop', async (req, res) => {
    res.json({ data: await service.stopExperiment(db, teamOf(res), req.params.experiment, changeOf(res)) });
  });
  return router;
}
