import type { Router } from 'express';
import { keyedRoutes } from '../routes/keyed-routes';
import type { Storage } from '../storage/database';
import * as service from './service';

export function eventRoutes({ db }: Storage): Router {
  return keyedRoutes(db, 'event', {
    list: service.listEvents,
    create: service.createEvent,
    get: service.getEvent,
    update: service.updateEvent,
    remove: service.deleteEvent,
  });
}
