import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { startChild, stopAllChildren, type ChildServer } from '../support/process';
import { createTeamAt, type TestTeam } from '../support/team';
import { freshStorage, openStorageAt, type StorageEnv } from '../support/storage';

/** Short timeouts for the test (the defaults are 10 s, 30 s and 5 s). */
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;
const KEEP_ALIVE_TIMEOUT_MS = 1000;
/**
 * Node looks for timed-out connections every HEADERS_TIMEOUT / 4 (here 250 ms); plus a loaded machine.
 * Still short of Node's own defaults (keep-alive 5 s, headers 60 s, request 300 s), so a setting that
 * is not applied fails the test.
 */
const SLACK_MS = 2500;

interface Trickled {
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number;
  /** What the server sent before closing. */
  received: string;
  /** Bytes the client managed to send. */
  sentBytes: number;
}

/**
 * A raw client that sends `initial`, then `drip` every `everyMs` — it never stops on its own,
 * so only the server can end the connection. Gives up (and fails the test) after `giveUpMs`.
 */
function trickle(port: number, initial: string, drip: string, everyMs: number, giveUpMs = 10_000): Promise<Trickled> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let received = '';
    let sentBytes = 0;
    let timer: NodeJS.Timeout | undefined;
    const send = (text: string) => {
      if (text && socket.writable) {
        socket.write(text);
        sentBytes += Buffer.byteLength(text);
      }
    };
    socket.once('connect', () => {
      send(initial);
      if (drip) timer = setInterval(() => send(drip), everyMs);
    });
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('error', () => {}); // a reset is a close too
    socket.once('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: Date.now() - started, received, sentBytes });
    });
    const giveUp = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error(`the server kept a slow connection open for ${giveUpMs} ms (received: ${JSON.stringify(received)})`));
    }, giveUpMs);
  });
}

describe.each(engines)('slow clients on %s', (engine) => {
  let server: ChildServer;
  let storageEnv: StorageEnv;
  let team: TestTeam;
  let cleanup: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const storage = await freshStorage(engine);
    storageEnv = storage.storageEnv;
    cleanup = storage.cleanup;
    server = await startChild(storageEnv, {
      HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_MS / 1000),
      REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_MS / 1000),
      KEEP_ALIVE_TIMEOUT_SECONDS: String(KEEP_ALIVE_TIMEOUT_MS / 1000),
    });
    team = await createTeamAt(server.baseUrl, storageEnv, 'Slow clients');
  });

  afterAll(async () => {
    await stopAllChildren();
    await cleanup();
  });

  it('when a client trickles its request head a header line at a time, then the server answers 408 and closes once the headers timeout has passed', async () => {
    // Act
    const result = await trickle(server.port, `POST /api/teams/${team.id}/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\n`, 'X-Slow: 1\r\n', 100);
    // Assert
    expect(result.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(result.closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(result.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    expect(server.running()).toBe(true);
  });

  it('when a client connects and sends nothing, then the server closes the connection once the headers timeout has passed', async () => {
    const result = await trickle(server.port, '', '', 0);
    expect(result.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    expect(result.received === '' || /^HTTP\/1\.1 408 /.test(result.received)).toBe(true);
  });

  it('when a client sends its head and trickles the body, then the server answers 408 and closes once the request timeout has passed, and nothing is stored', async () => {
    // Arrange: a well-formed ingest whose body arrives a byte at a time, far too slowly
    const body = JSON.stringify({ participant: 'slow-body', event: 'goal' }).padEnd(400, ' ');
    const head =
      `POST /api/teams/${team.id}/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${team.ingestKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    // Act
    const result = await trickle(server.port, head + body.slice(0, 5), ' ', 100);
    // Assert
    expect(result.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(result.closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expect(result.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    expect(result.sentBytes).toBeLessThan(Buffer.byteLength(head + body));
    const storage = await openStorageAt(storageEnv);
    try {
      expect(await storage.db.selectFrom('participants').select('key').where('team_id', '=', team.id).execute()).toEqual([]);
    } finally {
      await storage.close();
    }
  });

  it('when a keep-alive connection stays idle after its answer, then the server closes it once the keep-alive timeout has passed', async () => {
    // Act: one complete request, then silence
    let answeredAt = 0;
    const result = await new Promise<{ received: string; closedAt: number }>((resolve) => {
      const socket = connect(server.port, '127.0.0.1', () => socket.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n'));
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk.toString();
        if (!answeredAt && received.includes('"status":"ok"')) answeredAt = Date.now();
      });
      socket.on('error', () => {});
      socket.once('close', () => resolve({ received, closedAt: Date.now() }));
    });
    // Assert
    expect(result.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(result.received).toMatch(/keep-alive/i);
    expect(answeredAt).toBeGreaterThan(0);
    expect(result.closedAt - answeredAt).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 200);
    expect(result.closedAt - answeredAt).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + SLACK_MS);
  });

  it('when 50 clients trickle their heads at once, then other clients are still served meanwhile and all 50 are closed in time', async () => {
    // Arrange + Act: 50 slow connections, and ordinary requests while they hang on
    const slow = Array.from({ length: 50 }, () => trickle(server.port, 'GET /api/health HTTP/1.1\r\n', 'X-Slow: 1\r\n', 100));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const response = await fetch(`${server.baseUrl}/api/health`);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      latencies.push(Date.now() - started);
    }
    const results = await Promise.all(slow);
    // Assert
    expect(Math.max(...latencies)).toBeLessThan(1000);
    for (const result of results) {
      expect(result.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS + 1000);
    }
    expect(server.running()).toBe(true);
    expect((await fetch(`${server.baseUrl}/api/health`)).status).toBe(200);
  });
});
