import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pino } from 'pino';
import { createApp } from './app';
import { ConfigStreams } from './config/streams';
import { OFREP_STREAMS } from './ofrep/event-stream';
import { ServiceUnavailable } from './http/errors';
import { writeProblem } from './http/problem';
import { sweepAuditLogEvery } from './audit/service';
import { sweepIngestKeys } from './ingest/keys';
import { sweepPreExposureActivityEvery } from './ledger/pre-exposure-sweep';
import { recordAddress, urlOf } from './address';
import { seconds, settingsFromEnv } from './settings/settings';
import { openStorage } from './storage/database';
import { startWebhookDelivery } from './webhooks/delivery';
import { watchRollouts } from './rollouts/watcher';

/**
 * How long things may take, in seconds (decimals allowed), from the environment:
 * - HEADERS_TIMEOUT_SECONDS (10): a client must send the complete request head within this;
 * - REQUEST_TIMEOUT_SECONDS (30): … and the complete request, body included, within this;
 * - KEEP_ALIVE_TIMEOUT_SECONDS (5): an idle keep-alive connection is closed after this;
 * - SHUTDOWN_TIMEOUT_SECONDS (10): after SIGTERM/SIGINT the process exits within this, even if
 *   something hangs (exit code 1 then);
 * and, read with the other settings (server/settings/settings.ts) since the admin CLI honours them too,
 * DATABASE_CONNECT_TIMEOUT_SECONDS and SQLITE_BUSY_TIMEOUT_SECONDS.
 * A slow client (one trickling its head or body) therefore holds a connection at most
 * REQUEST_TIMEOUT_SECONDS; it is answered 408 and disconnected.
 */
interface Lifecycle {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  shutdownTimeoutMs: number;
}

function lifecycleFromEnv(env: NodeJS.ProcessEnv = process.env): Lifecycle {
  const lifecycle = {
    headersTimeoutMs: seconds(env, 'HEADERS_TIMEOUT_SECONDS', 10),
    requestTimeoutMs: seconds(env, 'REQUEST_TIMEOUT_SECONDS', 30),
    keepAliveTimeoutMs: seconds(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 5),
    shutdownTimeoutMs: seconds(env, 'SHUTDOWN_TIMEOUT_SECONDS', 10),
  };
  if (lifecycle.headersTimeoutMs > lifecycle.requestTimeoutMs) {
    throw new Error('HEADERS_TIMEOUT_SECONDS must not exceed REQUEST_TIMEOUT_SECONDS');
  }
  return lifecycle;
}

const settings = settingsFromEnv();
const lifecycle = lifecycleFromEnv();
const logger = pino({ level: settings.logLevel });
const storage = await openStorage(settings);
if (storage.autovacuum === false) logger.warn('PostgreSQL runs without autovacuum: nothing analyzes the tables, and ingest slows as they grow; turn it on');
const configStreams = new ConfigStreams(settings.configStreams);
const ofrepStreams = new ConfigStreams(settings.ofrepStreams, OFREP_STREAMS);
const app = createApp({ ...settings, storage, logger, configStreams, ofrepStreams });
const stopSweeping = sweepIngestKeys(storage, settings.ingestKeyWindowMs, logger);
const stopSweepingAuditLog = sweepAuditLogEvery(storage.db, settings.auditLogRetentionDays, logger);
const stopSweepingPreExposure = sweepPreExposureActivityEvery(storage, logger);
const webhookDelivery = startWebhookDelivery(storage.db, settings.webhooks, logger);
const rolloutWatch = watchRollouts(storage, settings.rolloutCheckMs, logger);

let shuttingDown = false;
/** Responses the app is working on: they finish during a shutdown. */
const inFlight = new Set<ServerResponse>();

/**
 * The app, unless this process is shutting down: then a request is refused with 503 (and
 * `Connection: close`) before the app — authentication, storage, anything — sees it.
 */
function handle(req: IncomingMessage, res: ServerResponse): void {
  if (shuttingDown) {
    writeProblem(res, new ServiceUnavailable('This process is shutting down; nothing was done. Retry (another process may answer).'), {
      Connection: 'close',
      'Access-Control-Allow-Origin': '*',
    });
    return;
  }
  inFlight.add(res);
  res.once('close', () => {
    inFlight.delete(res);
    // Its connection is idle now: close it rather than wait for the client's next request.
    if (shuttingDown) server.closeIdleConnections();
  });
  app(req, res);
}

const server = createServer(
  {
    headersTimeout: lifecycle.headersTimeoutMs,
    requestTimeout: lifecycle.requestTimeoutMs,
    keepAliveTimeout: lifecycle.keepAliveTimeoutMs,
    // How often Node looks for connections past headersTimeout / requestTimeout (default 30 s,
    // which would let a slow client stay up to 30 s past a short timeout).
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.round(lifecycle.headersTimeoutMs / 4))),
  },
  handle,
);

server.on('error', (error) => {
  logger.fatal({ err: error }, 'the server failed');
  process.exit(1);
});

let forgetAddress = () => {};
server.listen(settings.port, settings.host, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const url = urlOf(settings.host, port);
  // SQLite's data directory is this server's own; PostgreSQL's servers share no directory.
  if (storage.engine === 'sqlite') forgetAddress = recordAddress(settings.dataDir, url);
  logger.info({ port, host: settings.host, storage: storage.engine, durability: storage.durability }, `listening on ${url} (docs at /docs)`);
});

/**
 * SIGTERM / SIGINT: stop accepting connections; refuse (503) requests that arrive on open
 * connections; end the config streams; let the other requests in flight finish (they answer with `Connection: close`); close
 * idle keep-alive connections; then close storage and exit 0. If that takes longer than
 * SHUTDOWN_TIMEOUT_SECONDS, or a second signal comes, exit 1 at once: a transaction cut short is
 * rolled back by the database, so a request is then done completely or not at all.
 */
function shutDown(signal: NodeJS.Signals): void {
  if (shuttingDown) {
    logger.warn({ signal, inFlight: inFlight.size }, 'second signal: exiting now');
    process.exit(1);
  }
  shuttingDown = true;
  const started = Date.now();
  logger.info({ signal, inFlight: inFlight.size }, 'shutting down');
  setTimeout(() => {
    logger.error({ inFlight: inFlight.size }, `shutdown did not finish within ${lifecycle.shutdownTimeoutMs / 1000} s: exiting`);
    process.exit(1);
  }, lifecycle.shutdownTimeoutMs).unref();

  stopSweeping();
  stopSweepingAuditLog();
  stopSweepingPreExposure();
  forgetAddress();
  for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
  // Streams would never finish by themselves: they end now, and their clients reconnect elsewhere.
  configStreams.endAll();
  ofrepStreams.endAll();
  server.close(async () => {
    let code = 0;
    try {
      await webhookDelivery.stop();
      await rolloutWatch.stop();
      await storage.close();
    } catch (error) {
      logger.error({ err: error }, 'closing storage failed');
      code = 1;
    }
    logger.info({ ms: Date.now() - started }, 'stopped');
    process.exit(code);
  });
  server.closeIdleConnections();
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, shutDown);
