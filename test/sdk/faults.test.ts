// The SDK against real server processes: one killed mid-flush and restarted on the same storage,
// rate limited (429 with Retry-After), storage unavailable (503), an upload that stalls until the
// server answers 408 — every item tracked is counted exactly once — and a config change made
// through another process, streamed to the SDK.
import { connect } from 'node:net';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient, type ClientOptions, type SdkError } from 'experimentation-api/sdk';
import { engines } from '../support/engines';
import { kill, startChild, stopAllChildren, stopChild, type ChildServer } from '../support/process';
import { clientsOf, createTeamAt, type TestTeam } from '../support/team';
import { freshStorage } from '../support/storage';
import { arrangeCheckout, EVENT, expectedStatistics, EXPERIMENT, FLAG, note, servedStatistics, type Journal } from '../support/sdk';

/** The SDK's base URL; requests to it go to whichever server process is current. */
const SERVICE = 'http://service.test';

interface Request {
  url: string;
  at: number;
  status?: number;
  retryAfter?: string | null;
}

/** An SDK for the team whose requests go to `current()`, recorded. Config is read once (no stream), so that only ingests count. */
function sdkFor(current: () => ChildServer, team: TestTeam, options: Partial<ClientOptions> = {}) {
  const errors: SdkError[] = [];
  const requests: Request[] = [];
  const client = createClient({
    baseUrl: SERVICE,
    team: team.id,
    ingestKey: team.ingestKey,
    stream: false,
    pollIntervalMs: 3_600_000,
    flushIntervalMs: 3_600_000,
    retryBaseMs: 50,
    maxRetryDelayMs: 500,
    onError: (error) => errors.push(error),
    fetch: async (input, init) => {
      const request: Request = { url: String(input), at: Date.now() };
      requests.push(request);
      const response = await fetch(request.url.replace(SERVICE, current().baseUrl), init);
      request.status = response.status;
      request.retryAfter = response.headers.get('retry-after');
      return response;
    },
    ...options,
  });
  return { client, errors, requests };
}

/**
 * Sends the request's head and half its body over a raw connection, then nothing more: the upload
 * has stalled. Resolves with what the server answers before it closes the connection.
 */
function stalledUpload(url: string, init: RequestInit | undefined): Promise<Response> {
  const target = new URL(url);
  const body = String(init?.body ?? '');
  const headers = { ...(init?.headers as Record<string, string>), Host: target.host, 'Content-Length': String(Buffer.byteLength(body)) };
  const head = `${init?.method ?? 'GET'} ${target.pathname} HTTP/1.1\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname, () => socket.write(head + body.slice(0, body.length / 2)));
    const received: Buffer[] = [];
    socket.on('data', (chunk) => received.push(chunk));
    socket.on('error', reject);
    socket.once('close', () => {
      const answer = Buffer.concat(received).toString();
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(answer);
      if (!status) return reject(new Error(`the server closed a stalled upload without an answer: ${JSON.stringify(answer)}`));
      resolve(new Response(answer.slice(answer.indexOf('\r\n\r\n') + 4) || null, { status: Number(status[1]) }));
    });
  });
}

/** Exposures for `count` participants, and one or two events for half of them. */
function exposeAndTrack(client: ReturnType<typeof createClient>, journal: Journal, prefix: string, count: number): void {
  for (let i = 0; i < count; i++) {
    const participant = `${prefix}-${i}`;
    note(journal, participant, { variant: client.experiment(EXPERIMENT, participant) });
    const tracked = i % 2 === 0 ? 1 + (i % 4 === 0 ? 1 : 0) : 0;
    for (let t = 0; t < tracked; t++) client.track(participant, EVENT);
    note(journal, participant, { tracked });
  }
}

function itemsOf(journal: Journal): number {
  return [...journal.values()].reduce((sum, entry) => sum + (entry.variant ? 1 : 0) + entry.tracked, 0);
}

describe.each(engines)('the SDK through server faults on %s', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await stopAllChildren();
    for (const cleanup of cleanups) await cleanup();
  });

  async function arranged(env: Record<string, string> = {}) {
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    let server = await startChild(storageEnv);
    const team = await createTeamAt(server.baseUrl, storageEnv, 'SDK faults');
    await arrangeCheckout(clientsOf(server.baseUrl, team).api, team.id);
    if (Object.keys(env).length > 0) {
      await stopChild(server);
      server = await startChild(storageEnv, env);
    }
    return { storageEnv, server, team };
  }

  it('when the server is killed (SIGKILL) mid-flush and restarted on the same storage, then the SDK retries and every item is counted exactly once', { timeout: 300_000 }, async () => {
    // Arrange
    const { storageEnv, team, server: first } = await arranged();
    let server = first;
    const { client, errors } = sdkFor(() => server, team, { batchSize: 100 });
    await client.ready();
    const journal: Journal = new Map();
    exposeAndTrack(client, journal, 'killed', 3_000);

    // Act: kill once some batches are stored, while the rest are still to go.
    const flushed = client.flush();
    await expect.poll(() => client.stats().delivered, { timeout: 60_000, interval: 5 }).toBeGreaterThan(300);
    await kill(server);
    const deliveredAtKill = client.stats().delivered;
    server = await startChild(storageEnv);
    await flushed;

    // Assert
    expect(deliveredAtKill).toBeLessThan(itemsOf(journal));
    expect(errors).toEqual([]);
    expect(client.stats()).toMatchObject({ queued: 0, delivered: itemsOf(journal), rejected: 0 });
    expect(client.stats().retries).toBeGreaterThan(0);
    expect(await servedStatistics(clientsOf(server.baseUrl, team).api, team.id)).toEqual(expectedStatistics(journal));
    await client.close();
  });

  it('when ingests are rate limited (429), then the SDK waits out each Retry-After and every item is counted once', { timeout: 300_000 }, async () => {
    // Arrange: 3 requests a second for the ingest key.
    const { team, server } = await arranged({ RATE_LIMIT_PER_CREDENTIAL: '3', RATE_LIMIT_WINDOW_SECONDS: '1' });
    const { client, errors, requests } = sdkFor(() => server, team, { batchSize: 40 });
    await client.ready();
    const journal: Journal = new Map();
    exposeAndTrack(client, journal, 'limited', 200);

    // Act
    await client.flush();

    // Assert
    const batches = requests.filter((request) => request.url.endsWith('/ingest/batch'));
    const limited = batches.flatMap((request, index) => (request.status === 429 ? [{ request, next: batches[index + 1] }] : []));
    expect(limited.length).toBeGreaterThan(0);
    for (const { request, next } of limited) {
      expect(request.retryAfter).toMatch(/^\d+$/);
      expect(next!.at - request.at).toBeGreaterThanOrEqual(Number(request.retryAfter) * 1000);
    }
    expect(errors).toEqual([]);
    expect(client.stats()).toMatchObject({ queued: 0, delivered: itemsOf(journal), rejected: 0 });
    expect(await servedStatistics(clientsOf(server.baseUrl, team).api, team.id)).toEqual(expectedStatistics(journal));
    await client.close();
  });

  it('when an upload stalls until the server answers 408 (request timeout), then the SDK sends the batch again and every item is counted once', { timeout: 300_000 }, async () => {
    // Arrange: a whole request must arrive within 1 s; the first batch's upload stalls halfway.
    const { team, server } = await arranged({ HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '1' });
    const stalled: number[] = [];
    const { client, errors } = sdkFor(() => server, team, {
      batchSize: 500,
      fetch: async (input, init) => {
        const url = String(input).replace(SERVICE, server.baseUrl);
        if (url.endsWith('/ingest/batch') && stalled.length === 0) {
          const response = await stalledUpload(url, init);
          stalled.push(response.status);
          return response;
        }
        return fetch(url, init);
      },
    });
    await client.ready();
    const journal: Journal = new Map();
    exposeAndTrack(client, journal, 'stalled', 100);

    // Act
    await client.flush();

    // Assert
    expect(stalled).toEqual([408]);
    expect(errors).toEqual([]);
    expect(client.stats()).toMatchObject({ queued: 0, delivered: itemsOf(journal), rejected: 0, retries: 1 });
    expect(await servedStatistics(clientsOf(server.baseUrl, team).api, team.id)).toEqual(expectedStatistics(journal));
    await client.close();
  });

  it.runIf(engine === 'postgres')('when a flag is flipped through one server process, then an SDK streaming from another gets it', { timeout: 300_000 }, async () => {
    // Arrange: two processes on one database; the SDK streams from the second, polls an hour apart.
    const { storageEnv, team, server: writer } = await arranged();
    const reader = await startChild(storageEnv);
    const { client, errors, requests } = sdkFor(() => reader, team, { stream: true });
    await client.ready();
    const participant = Array.from({ length: 100 }, (_, i) => `streamer-${i}`).find((p) => client.experiment(EXPERIMENT, p) === 'treatment')!;
    expect(client.feature(FLAG, participant)).toBe('new');

    // Act
    const { api } = clientsOf(writer.baseUrl, team);
    const updated = await api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: FLAG } }, body: { enabled: false } });
    expect(updated.response.status).toBe(200);

    // Assert
    await expect.poll(() => client.feature(FLAG, participant), { timeout: 10_000 }).toBeNull();
    expect(requests.filter((request) => request.url.includes('/config')).map((request) => [new URL(request.url).pathname.replace(/^.*\/config/, 'config'), request.status])).toEqual([
      ['config/stream', 200],
    ]);
    await client.close();
    expect(errors).toEqual([]);
  });

  it.runIf(engine === 'sqlite')('when storage is unavailable (503: another process holds the write lock), then the SDK retries until it is back, and every item is counted once', { timeout: 300_000 }, async () => {
    // Arrange: a busy timeout of 0.2 s, and this process holding SQLite's write lock.
    const { storageEnv, team, server } = await arranged({ SQLITE_BUSY_TIMEOUT_SECONDS: '0.2' });
    // Small batches: each item of a batch waits out the busy timeout before its 503.
    const { client, errors } = sdkFor(() => server, team, { batchSize: 10 });
    await client.ready();
    const journal: Journal = new Map();
    exposeAndTrack(client, journal, 'locked', 300);
    const locker = new BetterSqlite3(join(storageEnv.DATA_DIR!, 'experimentation.sqlite'));
    locker.pragma('busy_timeout = 5000');
    locker.exec('begin immediate');

    // Act
    let flushed: Promise<void>;
    try {
      flushed = client.flush();
      await expect.poll(() => client.stats().retries, { timeout: 60_000 }).toBeGreaterThan(0);
    } finally {
      locker.exec('rollback');
      locker.close();
    }
    await flushed;

    // Assert
    expect(errors).toEqual([]);
    expect(client.stats()).toMatchObject({ queued: 0, delivered: itemsOf(journal), rejected: 0 });
    expect(await servedStatistics(clientsOf(server.baseUrl, team).api, team.id)).toEqual(expectedStatistics(journal));
    await client.close();
  });
});
