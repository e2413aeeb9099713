import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { createApp, type AppOptions } from '../../server/app';
import type { Storage } from '../../server/storage/database';

/** An Express app on a free port of 127.0.0.1, its base URL and how to stop it. */
export async function listen(app: Express): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const listener = app.listen(0, '127.0.0.1');
  keepIdleConnectionsLonger(listener);
  await new Promise((resolve) => listener.once('listening', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`,
    close: async () => {
      listener.closeAllConnections();
      await new Promise((resolve) => listener.close(resolve));
    },
  };
}

/**
 * Keeps an idle keep-alive connection open well past the client's own 4 s. On a loaded machine
 * the client's timer fires late, and with the server's default 5 s it can send a request on a
 * connection the server is closing ("other side closed").
 */
export function keepIdleConnectionsLonger(server: Server): void {
  server.keepAliveTimeout = 60_000;
}

/** A second app on the same storage with its own options (logger, budgets, …), for the enclosing describe block. */
export function useApp(storage: () => Storage, options: Partial<AppOptions>): () => string {
  let listening: Awaited<ReturnType<typeof listen>> | undefined;
  beforeAll(async () => {
    listening = await listen(createApp({ storage: storage(), logger: pino({ level: 'silent' }), validateResponses: true, ...options }));
  });
  afterAll(async () => {
    await listening?.close();
  });
  return () => {
    if (!listening) throw new Error('the app is not started yet');
    return listening.baseUrl;
  };
}
