import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import type { WebhookSettings } from '../../server/settings/settings';
import type { Engine } from '../../server/storage/engine';
import { startWebhookDelivery, type WebhookDelivery } from '../../server/webhooks/delivery';
import { startServer, type TestServer } from './server';
import { createTestTeam } from './team';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver answers the n-th request (from 1): a status, or `hang` (never answers). */
export type Answer = (request: Received, n: number, res: ServerResponse) => number | 'hang';

/** A real HTTP receiver on 127.0.0.1 that records every request and answers as `answer` says (200 unless set). */
export interface Receiver {
  url: string;
  received: Received[];
  /** The webhook-ids received, in order of arrival (duplicates kept). */
  ids(): string[];
  answer: Answer;
  /** The most requests it had open at once. */
  mostAtOnce: number;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<Receiver> {
  let open = 0;
  const receiver: Receiver = {
    url: '',
    received: [],
    ids: () => receiver.received.map((request) => String(request.headers['webhook-id'])),
    answer: () => 200,
    mostAtOnce: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      open++;
      receiver.mostAtOnce = Math.max(receiver.mostAtOnce, open);
      res.once('close', () => open--);
      const request = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      receiver.received.push(request);
      const status = receiver.answer(request, receiver.received.length, res);
      if (status === 'hang') return;
      if (!res.headersSent) res.writeHead(status).end(status >= 300 && status < 400 ? '' : 'ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return receiver;
}

/** Delivery settings short enough for tests: attempts of 5 s, retries after 50–100 ms growing to at most 0.4 s, looked for every 50 ms. */
export const QUICK: WebhookSettings = { allowPrivateAddresses: true, timeoutMs: 5000, retryBaseMs: 100, retryMaxMs: 400, retryWindowMs: 86_400_000, pollMs: 50, secretOverlapMs: 86_400_000 };

let teams = 0;

/** The real server on a real port with the delivery worker running, as main.ts composes them, on fresh storage. */
export async function startWebhookServer(engine: Engine, settings: WebhookSettings = QUICK, options: { worker?: WebhookSettings | false } = {}): Promise<TestServer> {
  const logger = pino({ level: 'silent' });
  const server = await startServer({ engine, app: { logger, webhooks: settings } });
  const workerSettings = options.worker ?? settings;
  const worker: WebhookDelivery | undefined = workerSettings ? startWebhookDelivery(server.storage.db, workerSettings, logger) : undefined;
  return {
    ...server,
    async newTeam() {
      const email = `webhooks${process.pid}-${++teams}@example.com`;
      return createTestTeam(server.storage, server.baseUrl, `Webhooks ${teams}`, email);
    },
    async close() {
      await worker?.stop();
      await server.close();
    },
  };
}

/** Polls `condition` until it holds (or fails after `timeoutMs`, with `what` in the message). */
export async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
