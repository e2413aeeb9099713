import type { RequestHandler } from 'express';
import { Forbidden, Unauthorized } from '../http/errors';
import { operationOf } from '../http/routing';
import type { Db } from '../storage/database';
import { hashCredential, kindOf } from './credentials';
import type { Principal } from './principal';
import { findTeamByIngestKeyHash, findUserIdByTokenHash } from './store';

/** Resolves the bearer credential to a principal: 401 without a valid one, 403 for an ingest key where only tokens go. */
export function authenticate(db: Db): RequestHandler {
  return async (req, res, next) => {
    const operation = operationOf(res);
    const header = req.get('authorization');
    if (header === undefined && operation.isPublic) return next();
    const principal = header === undefined ? undefined : await identify(db, header);
    if (!principal) throw new Unauthorized();
    if (principal.kind === 'ingest-key' && !operation.acceptsIngestKey && !operation.isPublic) {
      throw new Forbidden('An ingest key can only call the ingest and config operations; use an API token.');
    }
    res.locals.principal = principal;
    next();
  };
}

async function identify(db: Db, header: string): Promise<Principal | undefined> {
  const match = /^Bearer +([A-Za-z0-9_-]{1,200})$/i.exec(header);
  if (!match) return undefined;
  const credential = match[1];
  const hash = hashCredential(credential);
  switch (kindOf(credential)) {
    case 'api-token': {
      const userId = await findUserIdByTokenHash(db, hash);
      return userId === undefined ? undefined : { kind: 'user', userId };
    }
    case 'ingest-key': {
      const team = await findTeamByIngestKeyHash(db, hash);
      return team === undefined ? undefined : { kind: 'ingest-key', team };
    }
    default:
      return undefined;
  }
}
