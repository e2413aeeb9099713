import { pino } from 'pino';
import { createApp } from './app';
import { settingsFromEnv } from './settings';
import { openStorage } from './storage/database';

const settings = settingsFromEnv();
const logger = pino({ level: settings.logLevel });
const storage = await openStorage(settings);
const app = createApp({ storage, logger, validateResponses: settings.validateResponses });

const server = app.listen(settings.port, settings.host, () => {
  logger.info({ port: settings.port, host: settings.host, storage: storage.engine }, `listening on http://${settings.host}:${settings.port} (docs at /docs)`);
});

// SIGTERM: stop accepting, let in-flight requests finish, then close storage.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    logger.info({ signal }, 'shutting down');
    server.close(async () => {
      await storage.close();
      process.exit(0);
    });
    server.closeIdleConnections();
  });
}
