import type { RequestHandler } from 'express';
import type { Identify } from '../auth/identify';
import { Forbidden, Unauthorized } from '../http/errors';
import { operationOf } from './routing';

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
