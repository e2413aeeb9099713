import { Router } from 'express';
import { sql } from 'kysely';
import { StorageUnavailable } from '../http/errors';
import type { Storage } from '../storage/database';

export function healthRoutes({ db }: Storage): Router {
  const router = Router({ caseSensitive: true });
  router.get('/health', async (_req, res) => {
    try {
      await sql`select 1`.execute(db);
    } catch {
      throw new StorageUnavailable();
    }
    res.json({ data: { status: 'ok' } });
  });
  return router;
}
