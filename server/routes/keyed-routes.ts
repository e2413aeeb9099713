import { Router } from 'express';
import { changeOf } from '../audit/routes';
import type { Change } from '../audit/service';
import type { Db } from '../storage/database';
import { teamOf } from '../teams/middleware';
import type { TeamRow } from '../teams/store';
import { includeOf } from './include';
import { paginated, pageRequest, type PageRequest } from './pagination';

/** The use cases of a team resource addressed by key; list and get also take what `include` asks to embed. */
export interface KeyedService<T, Create, Update> {
  list(db: Db, team: TeamRow, page: PageRequest, include: string[]): Promise<{ items: T[]; total: number }>;
  create(db: Db, team: TeamRow, input: Create, change: Change): Promise<T>;
  get(db: Db, team: TeamRow, key: string, include: string[]): Promise<T>;
  update(db: Db, team: TeamRow, key: string, input: Update, change: Change): Promise<T>;
  remove(db: Db, team: TeamRow, key: string, change: Change): Promise<T>;
}

/** GET/POST on the collection, GET/PUT/DELETE on `/:param` — each answering `{ data }`. */
export function keyedRoutes<T, Create, Update>(db: Db, param: string, service: KeyedService<T, Create, Update>): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });

  router.get('/', async (req, res) => {
    const page = pageRequest(req);
    const { items, total } = await service.list(db, teamOf(res), page, includeOf(req));
    res.json(paginated(req, items, total, page));
  });
  router.post('/', async (req, res) => {
    res.json({ data: await service.create(db, teamOf(res), req.body as Create, changeOf(res)) });
  });
  router.get(`/:${param}`, async (req, res) => {
    res.json({ data: await service.get(db, teamOf(res), req.params[param], includeOf(req)) });
  });
  router.put(`/:${param}`, async (req, res) => {
    res.json({ data: await service.update(db, teamOf(res), req.params[param], req.body as Update, changeOf(res)) });
  });
  router.delete(`/:${param}`, async (req, res) => {
    res.json({ data: await service.remove(db, teamOf(res), req.params[param], changeOf(res)) });
  });

  return router;
}
