import { Router, type Request } from 'express';
import { changeOf } from '../audit/routes';
import { BadRequest } from '../http/errors';
import { pathParam } from '../routes/params';
import type { Storage } from '../storage/database';
import type { ConfigFits } from '../teams/limits';
import { teamOf } from '../teams/middleware';
import * as service from './service';

type Create = Parameters<typeof service.createRollout>[3];

/** The rollouts of a flag, under `/teams/:team/features/:feature/rollouts`. */
export function rolloutRoutes({ db }: Storage, requireConfigFits: ConfigFits): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const feature = (req: Request) => pathParam(req, 'feature');
  router.get('/', async (req, res) => {
    res.json({ data: await service.listRollouts(db, teamOf(res), feature(req)) });
  });
  router.post('/', async (req, res) => {
    res.json({ data: await service.createRollout(db, teamOf(res), feature(req), req.body as Create, changeOf(res), requireConfigFits) });
  });
  router.get('/:rollout', async (req, res) => {
    res.json({ data: await service.getRollout(db, teamOf(res), feature(req), numberOf(req)) });
  });
  const actions = { pause: 'paused', resume: 'resumed', 'roll-back': 'rolled_back', release: 'released' } as const;
  for (const [path, action] of Object.entries(actions)) {
    router.post(`/:rollout/${path}`, async (req, res) => {
      res.json({ data: await service.act(db, teamOf(res), feature(req), numberOf(req), action, changeOf(res)) });
    });
  }
  return router;
}

/** The rollout's number as plain decimal digits (the contract's pattern; checked again here). */
function numberOf(req: Request): number {
  const raw = req.params.rollout;
  if (typeof raw === 'string' && /^[1-9][0-9]{0,8}$/.test(raw)) return Number(raw);
  throw new BadRequest('/path/rollout must be a decimal integer from 1 to 999999999', [{ path: '/path/rollout', message: 'must be a decimal integer from 1 to 999999999' }]);
}
