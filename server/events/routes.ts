import type { Router } from 'express';
import type { components } from '../../generated/api';
import { keyedRoutes } from '../routes/keyed-routes';
import type { Storage } from '../storage/database';
import type { ConfigFits } from '../teams/limits';
import * as service from './service';

type EventUpdate = components['schemas']['EventUpdate'];

export function eventRoutes({ db }: Storage, requireConfigFits: ConfigFits): Router {
  return keyedRoutes(db, 'event', {
    list: service.listEvents,
    create: service.createEvent,
    get: service.getEvent,
    update: (db, team, key, input: EventUpdate, change) => service.updateEvent(db, team, key, input, change, requireConfigFits),
    remove: service.deleteEvent,
  });
}
