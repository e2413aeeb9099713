import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { auditRoutes } from './audit/routes';
import { identifyIn } from './auth/authenticate';
import { configRoutes } from './config/routes';
import { teamConfigs } from './config/service';
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
import { problemHandler } from './http/problem';
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
import { cachesFromEnv, configStreamsFromEnv, ingestKeyWindowFromEnv, ofrepStreamsFromEnv, rateLimitFromEnv, trustProxyFromEnv, webhooksFromEnv, type CacheSettings, type RateLimitSettings, type TrustProxy, type WebhookSettings } from './settings';
import type { Storage } from './storage/database';
import { loadTeam } from './teams/middleware';
import { teamRoutes, userRoutes } from './teams/routes';
import { variantRoutes } from './variants/routes';
import { webhookRoutes } from './webhooks/routes';

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
  /** The config streams this process holds (main.ts ends them at shutdown); CONFIG_STREAMS_* from the environment when not given. */
  configStreams?: ConfigStreams;
  /** The OFREP event streams this process holds (main.ts ends them at shutdown); OFREP_STREAMS_* from the environment when not given. */
  ofrepStreams?: ConfigStreams;
  /** The bounds of the process's caches; CACHE_* from the environment when not given. */
  caches?: CacheSettings;
  /** How long an ingest's idempotency key is kept (the key sweep's window, main.ts); INGEST_KEY_WINDOW_* from the environment when not given. */
  ingestKeyWindowMs?: number;
  /** Which webhook URLs are taken (WEBHOOK_ALLOW_PRIVATE_ADDRESSES); WEBHOOK_* from the environment when not given. */
  webhooks?: Pick<WebhookSettings, 'allowPrivateAddresses' | 'secretOverlapMs'>;
}

/**
 * The order is the point: CORS headers first (so every answer has them, errors included) and
 * preflights answered there; then, for /api, the rate limit counts the request before anything
 * does work on it — the contract's routing (404/405), authentication, body parsing, validation.
 */
export function createApp({ storage, logger, validateResponses, validateRequests = process.env.VALIDATE_REQUESTS !== 'false', rateLimit = rateLimitFromEnv(), trustProxy = trustProxyFromEnv(), configStreams = new ConfigStreams(configStreamsFromEnv()), ofrepStreams = new ConfigStreams(ofrepStreamsFromEnv(), OFREP_STREAMS), caches = cachesFromEnv(), ingestKeyWindowMs = ingestKeyWindowFromEnv(), webhooks = webhooksFromEnv() }: AppOptions): Express {
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
  api.use('/teams/:team/events', eventRoutes(storage));
  api.use('/teams/:team/experiments/:experiment/results', resultRoutes(storage));
  api.use('/teams/:team/experiments/:experiment/variants', variantRoutes(storage));
  api.use('/teams/:team/experiments', experimentRoutes(storage));
  api.use('/teams/:team/features/:feature/rollouts', rolloutRoutes(storage));
  api.use('/teams/:team/features', featureRoutes(storage));
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
