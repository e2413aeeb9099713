import { Router, type Request } from 'express';
import { changeOf } from '../audit/routes';
import { BadRequest } from '../http/errors';
import type { WebhookSettings } from '../settings/settings';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import * as service from './service';

type Create = Parameters<typeof service.createEndpoint>[2];
type Update = Parameters<typeof service.updateEndpoint>[3];

export function webhookRoutes({ db }: Storage, settings: Pick<WebhookSettings, 'allowPrivateAddresses' | 'secretOverlapMs'>): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const allowPrivate = settings.allowPrivateAddresses;
  router.get('/', async (_req, res) => {
    res.json({ data: await service.listEndpoints(db, teamOf(res)) });
  });
  router.post('/', async (req, res) => {
    res.json({ data: await service.createEndpoint(db, teamOf(res), req.body as Create, changeOf(res), allowPrivate) });
  });
  router.get('/:webhook', async (req, res) => {
    res.json({ data: await service.getEndpoint(db, teamOf(res), req.params.webhook!) });
  });
  router.put('/:webhook', async (req, res) => {
    res.json({ data: await service.updateEndpoint(db, teamOf(res), req.params.webhook!, req.body as Update, changeOf(res), allowPrivate) });
  });
  router.delete('/:webhook', async (req, res) => {
    res.json({ data: await service.deleteEndpoint(db, teamOf(res), req.params.webhook!, changeOf(res)) });
  });
  router.post('/:webhook/rotate-secret', async (req, res) => {
    res.json({ data: await service.rotateSecret(db, teamOf(res), req.params.webhook!, changeOf(res), settings.secretOverlapMs) });
  });
  router.get('/:webhook/deliveries', async (req, res) => {
    const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100) throw new BadRequest('limit must be a whole number from 1 to 100.', [{ path: '/query/limit', message: 'must be an integer from 1 to 100' }]);
    res.json({ data: await service.listDeliveries(db, teamOf(res), req.params.webhook!, limit) });
  });
  router.post('/:webhook/deliveries/:delivery/redeliver', async (req, res) => {
    res.json({ data: await service.redeliver(db, teamOf(res), req.params.webhook!, idOf(req, 'delivery')) });
  });
  return router;
}

/** A path id as a plain decimal number (the validator also lets `1e0`, `0x1` and ` 1` through as integers). */
function idOf(req: Request, name: string): number {
  const raw = req.params[name];
  const id = typeof raw === 'string' && /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : NaN;
  if (Number.isSafeInteger(id)) return id;
  const message = `must be a decimal integer from 1 to ${Number.MAX_SAFE_INTEGER}`;
  throw new BadRequest(`/path/${name} ${message}`, [{ path: `/path/${name}`, message }]);
}
