import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { auditRoutes } from './audit/routes';
import { identifyIn } from './auth/identify';
import { configRoutes } from './config/routes';
import { requireConfigFits, teamConfigs } from './config/service';
import { ConfigStreams } from './config/streams';
import { evaluateRoutes } from './evaluate/routes';
import { eventRoutes } from './events/routes';
import { experimentRoutes } from './experiments/routes';
import { featureRoutes } from './features/routes';
import { healthRoutes } from './health/routes';
import { loadContract } from './contract/document';
import { serveConsole } from './console/routes';
import { serveContract } from './docs/routes';
import { corsHandler } from './contract/cors';
import { NotFound } from './http/errors';
import { problemHandler } from './contract/problem-handler';
import { requestLog } from './http/request-log';
import { rateLimiter } from './rate-limit/rate-limiter';
import { useContractGate } from './contract/gate';
import { ingestContexts } from './ingest/context';
import { ingestRoutes } from './ingest/routes';
import { ingestion } from './ingest/service';
import { apiKeyAsBearer } from './ofrep/credential';
import { OFREP_STREAMS, ofrepEventStreamRoutes } from './ofrep/event-stream';
import { ofrepRoutes } from './ofrep/routes';
import { participantRoutes } from './participants/routes';
import { resultRoutes } from './results/routes';
import { rolloutRoutes } from './rollouts/routes';
import { DEFAULT_SETTINGS, type AppSettings } from './settings/settings';
import type { Storage } from './storage/database';
import { loadTeam } from './teams/middleware';
import { teamRoutes, userRoutes } from './users/routes';
import { variantRoutes } from './variants/routes';
import { webhookRoutes } from './webhooks/routes';

/**
 * What the composition root (main.ts) hands the app: its storage and logger, the settings it read
 * once from the environment (server/settings/settings.ts; the documented defaults where not given — the app
 * reads no environment of its own), and the streams it ends at shutdown.
 */
export interface AppOptions extends Partial<Omit<AppSettings, 'configStreams' | 'ofrepStreams'>> {
  storage: Storage;
  logger: Logger;
  validateResponses: boolean;
  /** The config streams this process holds (main.ts ends them at shutdown); the default bounds when not given. */
  configStreams?: ConfigStreams;
  /** The OFREP event streams this process holds (main.ts ends them at shutdown); the default bounds when not given. */
  ofrepStreams?: ConfigStreams;
}

/**
 * The order is the point: CORS headers first (so every answer has them, errors included) and
 * preflights answered there; then, for /api, the rate limit counts the request before anything
 * does work on it — the contract's routing (404/405), authentication, body parsing, validation.
 */
export function createApp({
  storage,
  logger,
  validateResponses,
  validateRequests = DEFAULT_SETTINGS.validateRequests,
  rateLimit = DEFAULT_SETTINGS.rateLimit,
  trustProxy = DEFAULT_SETTINGS.trustProxy,
  caches = DEFAULT_SETTINGS.caches,
  ingestKeyWindowMs = DEFAULT_SETTINGS.ingestKeyWindowMs,
  webhooks = DEFAULT_SETTINGS.webhooks,
  configStreams = new ConfigStreams(DEFAULT_SETTINGS.configStreams),
  ofrepStreams = new ConfigStreams(DEFAULT_SETTINGS.ofrepStreams, OFREP_STREAMS),
}: AppOptions): Express {
  const contract = loadContract();
  const app = express();
  app.set('case sensitive routing', true);
  app.set('x-powered-by', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', trustProxy);
  app.use(requestLog(logger));
  app.use(corsHandler(contract));

  serveConsole(app);
  serveContract(app, { console: true });

  app.use(apiKeyAsBearer);
  if (rateLimit.enabled) app.use(rateLimiter(rateLimit));
  const identify = identifyIn(storage.db, storage.engine);
  useContractGate(app, contract, identify, { validateRequests, validateResponses });

  // One of each per process: a config is built once per version, an unknown key looked up once.
  const configs = teamConfigs(caches.teams);
  const ingesting = ingestion(storage, ingestContexts(caches), ingestKeyWindowMs);
  const api = express.Router({ caseSensitive: true });
  api.use(healthRoutes(storage));
  api.use(userRoutes(storage));
  api.use('/teams/:team/config', configRoutes(storage, { identify, streams: configStreams, configs }));
  api.use('/teams/:team/ofrep/v1/evaluate', ofrepRoutes(storage, { configs, ingestion: ingesting }));
  api.use('/teams/:team/ofrep/v1/event-stream', ofrepEventStreamRoutes(storage, { identify, streams: ofrepStreams }));
  api.use('/teams/:team', loadTeam(storage.db));
  api.use('/teams/:team', teamRoutes(storage));
  api.use('/teams/:team/audit-log', auditRoutes(storage));
  api.use('/teams/:team/webhooks', webhookRoutes(storage, webhooks));
  api.use('/teams/:team/events', eventRoutes(storage, requireConfigFits));
  api.use('/teams/:team/experiments/:experiment/results', resultRoutes(storage));
  api.use('/teams/:team/experiments/:experiment/variants', variantRoutes(storage));
  api.use('/teams/:team/experiments', experimentRoutes(storage, requireConfigFits));
  api.use('/teams/:team/features/:feature/rollouts', rolloutRoutes(storage, requireConfigFits));
  api.use('/teams/:team/features', featureRoutes(storage, requireConfigFits));
  api.use('/teams/:team/participants', participantRoutes(storage));
  api.use('/teams/:team/ingest', ingestRoutes(ingesting));
  api.use('/teams/:team/evaluate', evaluateRoutes(storage, { configs, ingestion: ingesting }));
  app.use('/api', api);

  app.use((req) => {
    throw new NotFound(`There is nothing at ${req.path}.`);
  });
  app.use(problemHandler(logger));
  return app;
}
