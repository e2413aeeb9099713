import { Router } from 'express';
import type { Identify } from '../auth/identify';
import { hashCredential } from '../auth/credentials';
import { matchesAny } from '../http/conditional';
import type { Storage } from '../storage/database';
import { loadTeam, teamOf } from '../teams/middleware';
import { currentConfig, type TeamConfigs } from './service';
import { etagOf, serveConfigStream } from './stream';
import type { ConfigStreams } from './streams';

export function configRoutes(storage: Storage, { identify, streams, configs }: { identify: Identify; streams: ConfigStreams; configs: TeamConfigs }): Router {
  const { db } = storage;
  const router = Router({ mergeParams: true, caseSensitive: true });
  // A credential of another team is told 403 here, not 404: SDKs need to know their key is wrong.
  router.get('/', loadTeam(db, 'config'), async (req, res) => {
    const team = teamOf(res);
    const etag = etagOf(team);
    res.set('ETag', etag);
    if (matchesAny(req.get('If-None-Match'), etag)) {
      res.status(304).end();
      return;
    }
    res.json({ data: await currentConfig(db, configs, team) });
  });
  router.get('/stream', loadTeam(db, 'config'), (req, res) => {
    // Authentication let the request through, so its Authorization is a bearer credential.
    const bearer = req.get('authorization')!.replace(/^Bearer +/i, '');
    serveConfigStream({ storage, configs, identify, streams }, req, res, teamOf(res), { bearer, hash: hashCredential(bearer) });
  });
  return router;
}
