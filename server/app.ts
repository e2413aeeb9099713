import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Logger } from 'pino';
import { authenticate } from './auth/authenticate';
import { configRoutes } from './config/routes';
import { eventRoutes } from './events/routes';
import { experimentRoutes } from './experiments/routes';
import { featureRoutes } from './features/routes';
import { healthRoutes } from './health/routes';
import { contractPath, loadContract } from './http/contract';
import { corsHandler } from './http/cors';
import { NotFound } from './http/errors';
import { problemHandler } from './http/problem';
import { bareContentType, jsonBodies, plainQueryOnly } from './http/request-guards';
import { requestLog } from './http/request-log';
import { rateLimiter } from './http/rate-limit';
import { knownOperations } from './http/routing';
import { ingestRoutes } from './ingest/routes';
import { participantRoutes } from './participants/routes';
import { rateLimitFromEnv, trustProxyFromEnv, type RateLimitSettings, type TrustProxy } from './settings';
import type { Storage } from './storage/database';
import { loadTeam } from './teams/middleware';
import { teamRoutes, userRoutes } from './teams/routes';
import { variantRoutes } from './variants/routes';

export interface AppOptions {
  storage: Storage;
  logger: Logger;
  validateResponses: boolean;
  /** Off only to measure the validator's cost (VALIDATE_REQUESTS=false); on when not given. */
  validateRequests?: boolean;
  /** Request budgets; RATE_LIMIT_* from the environment when not given. */
  rateLimit?: RateLimitSettings;
  /** Express's `trust proxy` (who tells the client address); TRUST_PROXY from the environment when not given. */
  trustProxy?: TrustProxy;
}

const docsPath = fileURLToPath(new URL('../dist/docs/index.html', import.meta.url));

/**
 * The docs page loads nothing from outside this origin: Redoc's sidebar footer would fetch its
 * logo from cdn.redoc.ly (no option turns it off), and readers' browsers must not call third
 * parties. Redoc runs inline; its search falls back from eval'd workers to the main thread.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The order is the point: CORS headers first (so every answer has them, errors included) and
 * preflights answered there; then, for /api, the rate limit counts the request before anything
 * does work on it — the contract's routing (404/405), authentication, body parsing, validation.
 */
export function createApp({ storage, logger, validateResponses, validateRequests = process.env.VALIDATE_REQUESTS !== 'false', rateLimit = rateLimitFromEnv(), trustProxy = trustProxyFromEnv() }: AppOptions): Express {
  const contract = loadContract();
  const app = express();
  app.set('case sensitive routing', true);
  app.set('x-powered-by', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', trustProxy);
  app.use(requestLog(logger));
  app.use(corsHandler(contract));

  app.get('/openapi.json', (_req, res) => res.sendFile(contractPath));
  app.get('/docs', (_req, res) => {
    if (!existsSync(docsPath)) throw new NotFound('The docs are not built; run npm run docs.');
    res.set('Content-Security-Policy', DOCS_CSP).sendFile(docsPath);
  });

  if (rateLimit.enabled) app.use(rateLimiter(rateLimit, logger));
  app.use(knownOperations(contract));
  app.use('/api', authenticate(storage.db));
  app.use(plainQueryOnly, bareContentType, ...jsonBodies());
  app.use(
    OpenApiValidator.middleware({
      apiSpec: contractPath,
      validateRequests: validateRequests && { allowUnknownQueryParameters: false },
      validateResponses: validateResponses && { removeAdditional: false },
      validateSecurity: false,
      validateFormats: true,
      ignorePaths: (path: string) => !path.startsWith('/api/'),
    }),
  );

  const api = express.Router({ caseSensitive: true });
  api.use(healthRoutes(storage));
  api.use(userRoutes(storage));
  api.use('/teams/:team/config', configRoutes(storage));
  api.use('/teams/:team', loadTeam(storage.db));
  api.use('/teams/:team', teamRoutes(storage));
  api.use('/teams/:team/events', eventRoutes(storage));
  api.use('/teams/:team/experiments/:experiment/variants', variantRoutes(storage));
  api.use('/teams/:team/experiments', experimentRoutes(storage));
  api.use('/teams/:team/features', featureRoutes(storage));
  api.use('/teams/:team/participants', participantRoutes(storage));
  api.use('/teams/:team/ingest', ingestRoutes(storage));
  app.use('/api', api);

  app.use((req) => {
    throw new NotFound(`There is nothing at ${req.path}.`);
  });
  app.use(problemHandler);
  return app;
}
