import type { Router } from 'express';
import type { components } from '../../generated/api';
import { keyedRoutes } from '../routes/keyed-routes';
import type { Storage } from '../storage/database';
import type { ConfigFits } from '../teams/limits';
import * as service from './service';

type FeatureCreate = components['schemas']['FeatureCreate'];
type FeatureUpdate = components['schemas']['FeatureUpdate'];

export function featureRoutes({ db }: Storage, requireConfigFits: ConfigFits): Router {
  return keyedRoutes(db, 'feature', {
    list: service.listFeatures,
    create: (db, team, input: FeatureCreate, change) => service.createFeature(db, team, input, change, requireConfigFits),
    get: service.getFeature,
    update: (db, team, key, input: FeatureUpdate, change) => service.updateFeature(db, team, key, input, change, requireConfigFits),
    remove: service.deleteFeature,
  });
}
