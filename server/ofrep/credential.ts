import type { RequestHandler } from 'express';

const OFREP_PATH = /^\/api\/teams\/[^/]+\/ofrep\/v1\//;

/**
 * OFREP's API-key scheme: on its operations a credential sent as `X-API-Key` (and no
 * `Authorization`) is read as `Authorization: Bearer`, before the rate limit counts it, so that
 * it has its credential's budget and authenticates as any bearer credential does.
 */
export const apiKeyAsBearer: RequestHandler = (req, _res, next) => {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string' && req.headers.authorization === undefined && OFREP_PATH.test(req.path)) req.headers.authorization = `Bearer ${key}`;
  next();
};
