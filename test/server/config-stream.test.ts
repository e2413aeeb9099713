import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LISTENER_NAME } from '../../server/storage/postgres-listener';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { openConfigStream, type StreamReader } from '../support/event-stream';
import { startChild, stopAllChildren } from '../support/process';
import { createTeamAt, clientsOf } from '../support/team';
import { freshStorage } from '../support/storage';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

/**
 * How long a condition is waited for: well within the 15 s after which a stream looks at its
 * team's version by itself, so a change that was not announced is not found that way instead.
 */
const WITHIN = { timeout: 10_000 };

/** Streams a test opened: closed after it, whatever happened. */
const opened: StreamReader[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((stream) => stream.close()));
});

async function stream(baseUrl: string, team: number, credential: string, headers: Record<string, string> = {}): Promise<StreamReader> {
  const { response, stream, body } = await openConfigStream(baseUrl, team, credential, headers);
  expect(response.status, body).toBe(200);
  opened.push(stream!);
  return stream!;
}

async function addFlag(api: TestTeam['api'], team: number, key: string, enabled = true): Promise<void> {
  const { response } = await api.POST('/api/teams/{team}/features', { params: { path: { team } }, body: { key, enabled, value: 'on' } });
  expect(response.status).toBe(200);
}

async function flip(api: TestTeam['api'], team: number, key: string, enabled: boolean): Promise<void> {
  const { response } = await api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team, feature: key } }, body: { enabled } });
  expect(response.status).toBe(200);
}

/** Whether the last config the stream sent has flag `key` enabled (undefined: not there yet). */
const flagOf = (stream: StreamReader, key: string) => stream.configs().at(-1)?.data.data.features.find((f: { key: string }) => f.key === key)?.enabled;

describe.each(engines)('GET /api/teams/{team}/config/stream on %s', (engine) => {
  const server = useServer(engine);

  it('when a stream is opened with the ingest key, then it starts with retry, then the config GET …/config answers, its ETag as id', async () => {
    // Arrange
    const team = await server().newTeam();
    await addFlag(team.api, team.id, 'dark_mode');
    const config = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });

    // Act
    const opened = await stream(server().baseUrl, team.id, team.ingestKey);
    await expect.poll(() => opened.configs().length, WITHIN).toBe(1);

    // Assert
    expect(opened.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(opened.response.headers.get('cache-control')).toBe('no-cache');
    expect(opened.text.startsWith('retry: 1000\n\nevent: config\n')).toBe(true);
    expect(opened.configs()[0]).toEqual({ id: config.response.headers.get('etag'), data: config.data });
  });

  it('when a flag is flipped through the API while a stream is open, then the stream sends the new config', async () => {
    // Arrange
    const team = await server().newTeam();
    await addFlag(team.api, team.id, 'dark_mode');
    const opened = await stream(server().baseUrl, team.id, team.ingestKey);
    await expect.poll(() => flagOf(opened, 'dark_mode'), WITHIN).toBe(true);

    // Act
    await flip(team.api, team.id, 'dark_mode', false);

    // Assert: the message came, and says what GET …/config says now
    await expect.poll(() => flagOf(opened, 'dark_mode'), WITHIN).toBe(false);
    const config = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
    expect(opened.configs().at(-1)).toEqual({ id: config.response.headers.get('etag'), data: config.data });
  });

  it('when Last-Event-ID names the current config, then no config is sent until it changes', async () => {
    // Arrange
    const team = await server().newTeam();
    await addFlag(team.api, team.id, 'dark_mode');
    const current = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
    const opened = await stream(server().baseUrl, team.id, team.ingestKey, { 'last-event-id': current.response.headers.get('etag')! });

    // Act
    await flip(team.api, team.id, 'dark_mode', false);

    // Assert: the first config it sent is the changed one
    await expect.poll(() => opened.configs().length, WITHIN).toBeGreaterThan(0);
    expect(opened.configs()[0]!.id).not.toBe(current.response.headers.get('etag'));
    expect(flagOf(opened, 'dark_mode')).toBe(false);
  });

  it('when a credential already holds 10 streams, then one more is a 429 problem with Retry-After, and closing one lets another open', async () => {
    // Arrange
    const team = await server().newTeam();
    const ten = await Promise.all(Array.from({ length: 10 }, () => stream(server().baseUrl, team.id, team.ingestKey)));
    const other = await server().newTeam();

    // Act
    const refused = await openConfigStream(server().baseUrl, team.id, team.ingestKey);

    // Assert: refused, but the team's API token and other teams still stream
    expectProblem(refused.response, JSON.parse(refused.body!), 429, 'Too Many Requests');
    expect(JSON.parse(refused.body!).type).toBe('urn:experimentation:problem:too-many-streams');
    expect(refused.response.headers.get('retry-after')).toMatch(/^\d+$/);
    await stream(server().baseUrl, team.id, team.token);
    await stream(server().baseUrl, other.id, other.ingestKey);
    await ten[0]!.close();
    const reopened = async () => {
      const answer = await openConfigStream(server().baseUrl, team.id, team.ingestKey);
      if (answer.stream) opened.push(answer.stream);
      return answer.response.status;
    };
    await expect.poll(reopened, WITHIN).toBe(200);
  });

  it("when another team's ingest key asks for the stream, then it is a 403 problem and nothing is streamed", async () => {
    // Arrange
    const team = await server().newTeam();
    const other = await server().newTeam();

    // Act
    const answer = await openConfigStream(server().baseUrl, team.id, other.ingestKey);

    // Assert
    expectProblem(answer.response, JSON.parse(answer.body!), 403, 'Forbidden');
  });

  it('when the team is unknown or the credential missing, then 404 and 401 problems', async () => {
    const team = await server().newTeam();
    const unknown = await openConfigStream(server().baseUrl, 999_999_999, team.ingestKey);
    expectProblem(unknown.response, JSON.parse(unknown.body!), 404, 'Not Found');
    const anonymous = await fetch(`${server().baseUrl}/api/teams/${team.id}/config/stream`);
    expectProblem(anonymous, await anonymous.json(), 401, 'Unauthorized');
  });
});

describe.each(engines)('config streams of a server process on %s', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await stopAllChildren();
    for (const cleanup of cleanups) await cleanup();
  });

  async function storage() {
    const { storageEnv, cleanup } = await freshStorage(engine);
    cleanups.push(cleanup);
    return storageEnv;
  }

  /** Processes A and B on one database, a team with flag `dark_mode` on, and a stream of it on B that has sent it. */
  async function twoProcesses() {
    const storageEnv = await storage();
    const [a, b] = await Promise.all([startChild(storageEnv), startChild(storageEnv)]);
    const team = await createTeamAt(a.baseUrl, storageEnv, 'Two processes');
    await addFlag(clientsOf(a.baseUrl, team).api, team.id, 'dark_mode');
    const onB = await stream(b.baseUrl, team.id, team.ingestKey);
    await expect.poll(() => flagOf(onB, 'dark_mode'), WITHIN).toBe(true);
    return { a, team, onB, storageEnv };
  }

  it('when the server is sent SIGTERM with streams open, then it ends them and exits 0, long before its shutdown timeout', async () => {
    // Arrange: a shutdown timeout the test could not wait out
    const SHUTDOWN_TIMEOUT_SECONDS = 60;
    const storageEnv = await storage();
    const child = await startChild(storageEnv, { SHUTDOWN_TIMEOUT_SECONDS: String(SHUTDOWN_TIMEOUT_SECONDS) });
    const team = await createTeamAt(child.baseUrl, storageEnv, 'Shutdown');
    const streams = await Promise.all(Array.from({ length: 3 }, () => stream(child.baseUrl, team.id, team.ingestKey)));
    await expect.poll(() => streams.every((s) => s.configs().length === 1), WITHIN).toBe(true);

    // Act
    const signalledAt = Date.now();
    child.child.kill('SIGTERM');
    const exit = await child.exited;

    // Assert: exit 0 (the timeout exits 1), the streams ended by the server
    expect(exit, child.log()).toMatchObject({ code: 0, signal: null });
    expect(exit.at - signalledAt).toBeLessThan((SHUTDOWN_TIMEOUT_SECONDS * 1000) / 4);
    await expect.poll(() => streams.every((s) => s.ended), WITHIN).toBe(true);
  });

  it('when a process holds CONFIG_STREAMS_PER_PROCESS streams, then one more, of any credential, is a 503 problem with Retry-After', async () => {
    // Arrange
    const storageEnv = await storage();
    const child = await startChild(storageEnv, { CONFIG_STREAMS_PER_PROCESS: '2' });
    const [team, other] = [await createTeamAt(child.baseUrl, storageEnv, 'One'), await createTeamAt(child.baseUrl, storageEnv, 'Two')];
    await stream(child.baseUrl, team.id, team.ingestKey);
    await stream(child.baseUrl, team.id, team.token);

    // Act
    const refused = await openConfigStream(child.baseUrl, other.id, other.ingestKey);

    // Assert
    expectProblem(refused.response, JSON.parse(refused.body!), 503, 'Service Unavailable');
    expect(refused.response.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('when a client closes its stream, then the request log has its line, marked closed by the client', async () => {
    // Arrange
    const storageEnv = await storage();
    const child = await startChild(storageEnv, { LOG_LEVEL: 'info' });
    const team = await createTeamAt(child.baseUrl, storageEnv, 'Logged');
    const opened = await stream(child.baseUrl, team.id, team.ingestKey);
    await expect.poll(() => opened.configs().length, WITHIN).toBe(1);

    // Act
    await opened.close();

    // Assert
    const streamLine = () =>
      child
        .log()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { req?: { url?: string }; res?: { statusCode?: number }; closedByClient?: boolean })
        .find((entry) => entry.req?.url === `/api/teams/${team.id}/config/stream`);
    await expect.poll(streamLine, WITHIN).toMatchObject({ res: { statusCode: 200 }, closedByClient: true });
  });

  it.runIf(engine === 'postgres')('when a flag is flipped through one server process, then a stream on another process of the same database sends it', async () => {
    // Arrange
    const { a, team, onB } = await twoProcesses();

    // Act
    await flip(clientsOf(a.baseUrl, team).api, team.id, 'dark_mode', false);

    // Assert
    await expect.poll(() => flagOf(onB, 'dark_mode'), WITHIN).toBe(false);
  });

  it.runIf(engine === 'postgres')("when the process's listening connection is terminated, then it listens again, sends what changed meanwhile, and a later flip still reaches its stream", async () => {
    // Arrange: a stream on B, B's listening connection found
    const { a, team, onB, storageEnv } = await twoProcesses();
    const admin = new pg.Client({ connectionString: storageEnv.DATABASE_URL });
    await admin.connect();
    try {
      const listeners = async () =>
        (await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and application_name = $1 order by pid', [LISTENER_NAME])).rows.map((row) => row.pid);
      // A has a stream of none: only B listens.
      await expect.poll(listeners, WITHIN).toHaveLength(1);
      const [lost] = await listeners();

      // Act: the connection terminated, and at once a change nobody announces (as one made
      // while the connection was down would be missed): only B's looking again finds it
      await admin.query('select pg_terminate_backend($1)', [lost]);
      await admin.query('begin');
      await admin.query("update features set enabled = false where team_id = $1 and key = 'dark_mode'", [team.id]);
      await admin.query('update teams set config_version = config_version + 1 where id = $1', [team.id]);
      await admin.query('commit');

      // Assert: B listens again and sent the change (well before the stream's own 15 s look)
      await expect.poll(async () => (await listeners()).filter((pid) => pid !== lost), WITHIN).toHaveLength(1);
      expect(await listeners()).not.toContain(lost);
      await expect.poll(() => flagOf(onB, 'dark_mode'), WITHIN).toBe(false);

      // … and a later flip through A arrives by the new connection
      await flip(clientsOf(a.baseUrl, team).api, team.id, 'dark_mode', true);
      await expect.poll(() => flagOf(onB, 'dark_mode'), WITHIN).toBe(true);
      expect(onB.ended).toBe(false);
    } finally {
      await admin.end();
    }
  });
});
