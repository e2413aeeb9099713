import type { Router } from 'express';
import { keyedRoutes } from '../routes/keyed-routes';
import type { Storage } from '../storage/database';
import * as service from './service';

export function featureRoutes({ db }: Storage): Router {
  return keyedRoutes(db, 'feature', {
    list: service.listFeatures,
    create: service.createFeature,
    get: service.getFeature,
    update: service.updateFeature,
    remove: service.deleteFeature,
  });
}
