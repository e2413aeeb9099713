import type { RequestHandler } from 'express';
import { Forbidden, Unauthorized } from '../http/errors';
import { operationOf } from '../contract/routing';
import type { Db } from '../storage/database';
import { hashCredential, kindOf } from './credentials';
import type { Principal } from './principal';
import type { Engine } from '../storage/engine';
import { batchedLookup } from './lookups';
import { findTeamByIngestKeyHash, findTeamsByIngestKeyHashes, findUserIdByTokenHash, findUserIdsByTokenHashes } from './store';

/** Who a bearer credential is, or undefined when it is nobody. */
export type Identify = (credential: string) => Promise<Principal | undefined>;

/**
 * Resolves the bearer credential to a principal: 401 without a valid one, 403 for an ingest key
 * where only tokens go. A request without one that sends a `token` to an operation taking it
 * goes on: that operation's route checks the token.
 */
export function authenticate(identify: Identify): RequestHandler {
  return async (req, res, next) => {
    const operation = operationOf(res);
    const header = req.get('authorization');
    if (header === undefined && (operation.isPublic || (operation.acceptsStreamToken && req.query.token !== undefined))) return next();
    const credential = header === undefined ? undefined : bearerCredential(header);
    const principal = credential === undefined ? undefined : await identify(credential);
    if (!principal) throw new Unauthorized();
    if (principal.kind === 'ingest-key' && !operation.acceptsIngestKey && !operation.isPublic) {
      throw new Forbidden('An ingest key can only call the ingest and config operations; use an API token.');
    }
    res.locals.principal = principal;
    next();
  };
}

function bearerCredential(header: string): string | undefined {
  return /^Bearer +([A-Za-z0-9_-]{1,200})$/i.exec(header)?.[1];
}

/**
 * Credentials as stored: looked up by their hash, at each request. On PostgreSQL the lookups of
 * requests that arrive together go in one query (lookups.ts).
 */
export function identifyIn(db: Db, engine: Engine): Identify {
  const userOf = engine === 'postgres' ? batchedLookup((hashes) => findUserIdsByTokenHashes(db, hashes)) : (hash: string) => findUserIdByTokenHash(db, hash);
  const teamOf = engine === 'postgres' ? batchedLookup((hashes) => findTeamsByIngestKeyHashes(db, hashes)) : (hash: string) => findTeamByIngestKeyHash(db, hash);
  return async (credential) => {
    const hash = hashCredential(credential);
    switch (kindOf(credential)) {
      case 'api-token': {
        const holder = await userOf(hash);
        return holder === undefined ? undefined : { kind: 'user', ...holder };
      }
      case 'ingest-key': {
        const team = await teamOf(hash);
        return team === undefined ? undefined : { kind: 'ingest-key', team };
      }
      default:
        return undefined;
    }
  };
}
