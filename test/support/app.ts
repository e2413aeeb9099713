import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { createApp, type AppOptions } from '../../server/app';
import type { Storage } from '../../server/storage/database';

/** A second app on the same storage with its own options (logger, budgets, …), for the enclosing describe block. */
export function useApp(storage: () => Storage, options: Partial<AppOptions>): () => string {
  let baseUrl: string | undefined;
  let close: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const app = createApp({ storage: storage(), logger: pino({ level: 'silent' }), validateResponses: true, ...options });
    const listener = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listener.once('listening', resolve));
    baseUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    close = async () => {
      listener.closeAllConnections();
      await new Promise((resolve) => listener.close(resolve));
    };
  });
  afterAll(async () => {
    await close?.();
  });
  return () => {
    if (!baseUrl) throw new Error('the app is not started yet');
    return baseUrl;
  };
}
