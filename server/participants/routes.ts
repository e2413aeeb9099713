import { Router } from 'express';
import { changeOf } from '../audit/routes';
import { paginated, pageRequest } from '../routes/pagination';
import type { Storage } from '../storage/database';
import { teamOf } from '../teams/middleware';
import * as service from './service';

export function participantRoutes(storage: Storage): Router {
  const { db } = storage;
  const router = Router({ mergeParams: true, caseSensitive: true });

  router.get('/', async (req, res) => {
    const page = pageRequest(req);
    const { items, total } = await service.listParticipants(db, teamOf(res), page);
    res.json(paginated(req, items, total, page));
  });
  router.post('/', async (req, res) => {
    res.json({ data: await service.createParticipant(db, teamOf(res), req.body, changeOf(res)) });
  });
  router.get('/:participant', async (req, res) => {
    const page = pageRequest(req);
    const { detail, total } = await service.getParticipant(db, teamOf(res), req.params.participant, page);
    res.json({ ...paginated(req, detail.experiments, total, page), data: detail });
  });
  router.put('/:participant', async (req, res) => {
    res.json({ data: await service.updateParticipant(db, teamOf(res), req.params.participant, req.body, changeOf(res)) });
  });
  router.delete('/:participant', async (req, res) => {
    res.json({ data: await service.deleteParticipant(storage, teamOf(res), req.params.participant, changeOf(res)) });
  });

  router.get('/:participant/experiments', async (req, res) => {
    const page = pageRequest(req);
    const { items, total } = await service.listEnrolments(db, teamOf(res), req.params.participant, page);
    res.json(paginated(req, items, total, page));
  });
  router.get('/:participant/experiments/:experiment', async (req, res) => {
    res.json({ data: await service.getEnrolment(db, teamOf(res), req.params.participant, req.params.experiment) });
  });
  router.delete('/:participant/experiments/:experiment', async (req, res) => {
    res.json({ data: await service.unenrol(storage, teamOf(res), req.params.participant, req.params.experiment, changeOf(res)) });
  });

  return router;
}
