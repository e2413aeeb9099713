import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { expectStored, ingestOnce, runningExperiment, sleep, startChild, stopAllChildren, type ChildServer, type Ledger, type Sent } from '../support/process';
import { createTeamAt, type TestTeam } from '../support/team';
import { freshStorage, openStorageAt, type StorageEnv } from '../support/storage';

const CLIENTS = 24;
const SHUTDOWN_TIMEOUT_SECONDS = 5;

/**
 * What a client may see when the server is sent SIGTERM, and what it then means:
 * - 200: the ingest was done, durably (checked after a restart on the same storage);
 * - 503 problem with Retry-After and Connection: close: it arrived after the signal and nothing
 *   of it was done (the participant does not exist);
 * - a connection error (refused, or the connection closed before a request was taken): the app
 *   never saw the request, so nothing of it was done either. (Only when the shutdown deadline
 *   cuts a request short could it be done, and then completely or not at all: one transaction.)
 */
describe.each(engines)('graceful shutdown on %s', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await stopAllChildren();
    for (const cleanup of cleanups) await cleanup();
  });

  async function serverWithExperiment(env: Record<string, string> = {}): Promise<{ server: ChildServer; storageEnv: StorageEnv; team: TestTeam }> {
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    const server = await startChild(storageEnv, { SHUTDOWN_TIMEOUT_SECONDS: String(SHUTDOWN_TIMEOUT_SECONDS), ...env });
    const team = await createTeamAt(server.baseUrl, storageEnv, 'Shutdown');
    await runningExperiment(server.baseUrl, team);
    return { server, storageEnv, team };
  }

  it(`when SIGTERM comes while ${CLIENTS} clients ingest, then each ingest is done durably (200) or not at all (503 or refused), and the process exits 0 within the deadline`, async () => {
    // Arrange
    const { server, storageEnv, team } = await serverWithExperiment();
    const ledger: Ledger = new Map();
    const counts = { ok: 0, refused503: 0, connectionErrors: 0 };
    const unexpected: string[] = [];
    let signalled = false;

    // Act: clients ingest one new participant per request until the server is gone; SIGTERM in the middle
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 0; ; n++) {
        const key = `c${client}-p${n}`;
        const sent: Sent = { sent: 1, acked: 0 };
        ledger.set(key, sent);
        const outcome = await ingestOnce(server.baseUrl, team, { participant: key, event: 'goal' });
        if (outcome.kind === 'connection-error') {
          if (!signalled) unexpected.push(`${key}: ${outcome.error} before the signal`);
          counts.connectionErrors++;
          sent.mustBeAbsent = true;
          return;
        }
        if (outcome.status === 200) {
          counts.ok++;
          sent.acked = 1;
          sent.variant = (outcome.body as { data: { assignments: Array<{ experiment: string; variant: string }> } }).data.assignments[0]?.variant;
        } else if (outcome.status === 503) {
          counts.refused503++;
          sent.mustBeAbsent = true;
          if (!signalled) unexpected.push(`${key}: 503 before the signal`);
          expect(outcome.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(outcome.headers.get('connection')).toBe('close');
          expect(outcome.headers.get('content-type')).toMatch(/^application\/problem\+json/);
          expect(outcome.body).toMatchObject({ type: 'urn:experimentation:problem:unavailable', title: 'Service Unavailable', status: 503 });
        } else {
          unexpected.push(`${key}: ${outcome.status} ${JSON.stringify(outcome.body)}`);
        }
      }
    });
    const loadStarted = Date.now();
    while (counts.ok < 40 && Date.now() - loadStarted < 5000) await sleep(10);
    signalled = true;
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    await Promise.all(clients);

    // Assert: a clean exit in time, only the three outcomes, and storage agrees with each
    const shutdownMs = exit.at - signalledAt;
    expect(exit, server.log()).toMatchObject({ code: 0, signal: null });
    expect(shutdownMs).toBeLessThan(SHUTDOWN_TIMEOUT_SECONDS * 1000);
    expect(unexpected, server.log()).toEqual([]);
    expect(counts.ok).toBeGreaterThan(0);
    const restarted = await startChild(storageEnv);
    const summary = await expectStored(expect, restarted, storageEnv, team, ledger);
    expect(summary.unacknowledgedStored).toBe(0);
    console.info(
      `[shutdown ${engine}] ${CLIENTS} clients: ${counts.ok} × 200 (all stored), ${counts.refused503} × 503 and ${counts.connectionErrors} connection errors (none stored); exit 0 after ${shutdownMs} ms`,
    );
  });

  it('when a request is in flight at SIGTERM, then it finishes (200, Connection: close); a request completed after the signal is 503 and writes nothing; new connections are refused', async () => {
    // Arrange: A has sent its head and half its body (the app is reading it); B has sent half its head
    const { server, storageEnv, team } = await serverWithExperiment();
    const inFlight = rawIngest(server.port, team, 'in-flight');
    inFlight.socket.write(inFlight.head + inFlight.body.slice(0, 10));
    const late = rawIngest(server.port, team, 'late');
    const split = late.head.indexOf('Authorization');
    late.socket.write(late.head.slice(0, split));
    await sleep(300);

    // Act: SIGTERM, then both complete their requests
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    await sleep(300);
    const refused = await connectError(server.port);
    expect(server.running(), 'the process waits for the request in flight').toBe(true);
    inFlight.socket.write(inFlight.body.slice(10));
    late.socket.write(late.head.slice(split) + late.body);
    const [first, second] = await Promise.all([inFlight.response, late.response]);
    const exit = await server.exited;

    // Assert
    expect(refused).toBe('ECONNREFUSED');
    expect(first.status, first.raw).toBe(200);
    expect(first.headers.connection).toBe('close');
    expect(second.status, second.raw).toBe(503);
    expect(second.headers['retry-after']).toMatch(/^\d+$/);
    expect(second.headers.connection).toBe('close');
    expect(second.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(second.body)).toMatchObject({ type: 'urn:experimentation:problem:unavailable', status: 503 });
    expect(exit, server.log()).toMatchObject({ code: 0, signal: null });
    expect(exit.at - signalledAt).toBeLessThan(SHUTDOWN_TIMEOUT_SECONDS * 1000);
    const restarted = await startChild(storageEnv);
    const variant = (JSON.parse(first.body) as { data: { assignments: Array<{ variant: string }> } }).data.assignments[0].variant;
    const ledger: Ledger = new Map([
      ['in-flight', { sent: 1, acked: 1, variant }],
      ['late', { sent: 1, acked: 0, mustBeAbsent: true }],
    ]);
    await expectStored(expect, restarted, storageEnv, team, ledger);
  });

  it('when a request hangs past the shutdown deadline, then the process exits anyway (code 1) and the request left nothing', async () => {
    // Arrange: a deadline of 1 s, and a request whose body never completes
    const { server, storageEnv, team } = await serverWithExperiment({ SHUTDOWN_TIMEOUT_SECONDS: '1' });
    const hanging = rawIngest(server.port, team, 'hanging');
    hanging.socket.write(hanging.head + hanging.body.slice(0, 10));
    await sleep(300);

    // Act
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    const exit = await server.exited;

    // Assert
    const shutdownMs = exit.at - signalledAt;
    expect(exit).toMatchObject({ code: 1, signal: null });
    expect(shutdownMs).toBeGreaterThanOrEqual(900);
    // Well before the 30 s request timeout could have ended the hanging request (and a loaded machine may add seconds)
    expect(shutdownMs).toBeLessThan(10_000);
    expect(server.log()).toContain('shutdown did not finish within 1 s');
    const storage = await openStorageAt(storageEnv);
    try {
      expect(await storage.db.selectFrom('participants').select('id').where('team_id', '=', team.id).execute()).toEqual([]);
    } finally {
      await storage.close();
    }
    hanging.socket.destroy();
  });
});

interface RawResponse {
  raw: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An ingest over a raw socket, written by the test piece by piece; `response` is the first answer, read until the server closes. */
function rawIngest(port: number, team: TestTeam, participant: string): { socket: Socket; head: string; body: string; response: Promise<RawResponse> } {
  const body = JSON.stringify({ participant, event: 'goal' });
  const head =
    `POST /api/teams/${team.id}/ingest HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    `Authorization: Bearer ${team.ingestKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  const socket = connect(port, '127.0.0.1');
  const response = new Promise<RawResponse>((resolve) => {
    let raw = '';
    socket.on('data', (chunk) => (raw += chunk.toString()));
    socket.on('error', () => {});
    socket.on('close', () => resolve(parseResponse(raw)));
  });
  return { socket, head, body, response };
}

function parseResponse(raw: string): RawResponse {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { raw, status: Number(statusLine.split(' ')[1] ?? 0), headers, body: rest.join('\r\n\r\n') };
}

/** The error code of a new connection to the port ('connected' if it connects). */
function connectError(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });
}
