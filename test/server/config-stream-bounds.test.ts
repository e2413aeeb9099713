import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { openConfigStream, type StreamReader } from '../support/event-stream';
import type { TestTeam } from '../support/team';

/** Streams one credential may hold open on a server process (CONFIG_STREAMS_PER_CREDENTIAL's default). */
const PER_CREDENTIAL = 10;
const WITHIN = { timeout: 30_000, interval: 50 };

/** A stream opened over a raw connection whose client reads the answer's head and then nothing more. */
interface RawStream {
  socket: Socket;
  /** The client's port: the server's socket of this connection has it as its remote port. */
  port: number;
  /** The inode of the server's socket of this connection, once it was admitted. */
  serverSocket?: string;
  status: number;
  /** Set once the connection is closed on the client's side. */
  closed: boolean;
  /** Bytes read once reading resumed. */
  readLater: number;
}

const opened: RawStream[] = [];
const readers: StreamReader[] = [];
afterEach(async () => {
  for (const stream of opened.splice(0)) stream.socket.destroy();
  await Promise.all(readers.splice(0).map((reader) => reader.close()));
  vi.restoreAllMocks();
});

/** Opens the team's config stream and stops reading as soon as the status line is in. */
function openUnread(baseUrl: string, team: TestTeam): Promise<RawStream> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET /api/teams/${team.id}/config/stream HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${team.ingestKey}\r\nConnection: close\r\n\r\n`);
    });
    const stream = { socket, closed: false, readLater: 0 } as RawStream;
    socket.on('error', reject); // a reset closes it too
    socket.once('close', () => (stream.closed = true));
    socket.once('data', (chunk) => {
      socket.pause();
      socket.on('data', (later) => (stream.readLater += later.length));
      stream.port = socket.localPort!;
      stream.status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(chunk.toString('latin1'))?.[1]);
      opened.push(stream);
      resolve(stream);
    });
  });
}

/** TCP states of /proc/net/tcp in which the server still holds a connection: ESTABLISHED, SYN_RECV, CLOSE_WAIT. */
const HELD = new Set(['01', '03', '08']);
const ESTABLISHED = '01';
/** Reads of /proc/net/tcp that must all miss a socket for it to be taken as absent. */
const READS = 3;

/**
 * Linux's /proc/net/tcp: each socket's local and remote port, state and inode. The kernel writes
 * it a page at a time, and sockets come and go between pages: one read may list a socket twice
 * (seen under load: 11 of 10 sockets) or miss one. Counts go by distinct inode, and an absence
 * is believed only when several reads agree.
 */
function tcpSockets(): Array<{ local: number; remote: number; state: string; inode: string }> {
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length > 9)
    .map(([, local, remote, state, , , , , , inode]) => ({ local: parseInt(local!.split(':')[1]!, 16), remote: parseInt(remote!.split(':')[1]!, 16), state: state!, inode: inode! }));
}

/**
 * The inode of the server's socket of a connection just admitted, from the client's port. Later
 * counts go by inode: once a connection is closed, its client port may be taken by another one
 * (a refused stream, the test's own requests), which no inode is.
 */
function serverSocketOf(baseUrl: string, clientPort: number): string {
  const serverPort = Number(new URL(baseUrl).port);
  for (let read = 0; read < READS; read++) {
    const socket = tcpSockets().find(({ local, remote, state }) => local === serverPort && remote === clientPort && state === ESTABLISHED);
    if (socket) return socket.inode;
  }
  throw new Error(`no established server socket for the client port ${clientPort}`);
}

/**
 * Which of these server sockets (by inode) the server still holds: established, half-open, or
 * closed by the client but not yet by the server, in any of `reads` reads. A socket the server
 * has closed (FIN_WAIT, CLOSING, LAST_ACK, TIME_WAIT) may linger while a loaded client is slow to
 * answer its FIN; it is not held.
 */
function heldSockets(inodes: string[], reads = 1): Set<string> {
  const wanted = new Set(inodes);
  const held = new Set<string>();
  for (let read = 0; read < reads; read++) {
    for (const { state, inode } of tcpSockets()) if (HELD.has(state) && wanted.has(inode)) held.add(inode);
  }
  return held;
}

async function flip(team: TestTeam, enabled: boolean): Promise<void> {
  const { response } = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'big0' } }, body: { enabled } });
  expect(response.status).toBe(200);
}

describe.each(engines)('config streams whose clients stop reading, on %s', (engine) => {
  const server = useServer(engine);

  it('when streams of one key are cut off unread, then each connection is reset at once, and the key never holds more connections than its limit', async () => {
    // Arrange: a config of about 260 KB, which every flip sends to every open stream
    const team = await server().newTeam();
    for (let i = 0; i < 26; i++) {
      const { response } = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: `big${i}`, value: 'v'.repeat(10_000) } });
      expect(response.status).toBe(200);
    }
    const admitted: RawStream[] = [];
    const admit = (stream: RawStream) => {
      stream.serverSocket = serverSocketOf(server().baseUrl, stream.port);
      admitted.push(stream);
    };
    while (admitted.length < PER_CREDENTIAL) admit(await openUnread(server().baseUrl, team));
    expect(admitted.map((stream) => stream.status)).toEqual(Array(PER_CREDENTIAL).fill(200));

    // Act: the config changes while nobody reads; whenever the key has a slot again, one more stream takes it
    for (let flips = 0; admitted.length < PER_CREDENTIAL + 5; flips++) {
      expect(flips, 'flips before 5 more streams were admitted').toBeLessThan(400);
      await flip(team, flips % 2 === 0);
      const another = await openUnread(server().baseUrl, team);
      if (another.status === 200) admit(another);
      else another.socket.destroy();

      // Assert: the server never holds more of the key's connections than its limit
      expect(heldSockets(admitted.map((stream) => stream.serverSocket!)).size).toBeLessThanOrEqual(PER_CREDENTIAL);
    }

    // Assert: the connections the server let go are closed for their clients too, and what they
    // had not read was dropped (more than 4 MiB was held for each when it was cut off)
    const held = heldSockets(admitted.map((stream) => stream.serverSocket!), READS);
    const gone = admitted.filter((stream) => !held.has(stream.serverSocket!));
    expect(gone.length).toBeGreaterThanOrEqual(5);
    for (const stream of gone) stream.socket.resume();
    await expect.poll(() => gone.every((stream) => stream.closed), WITHIN).toBe(true);
    for (const stream of gone) expect(stream.readLater).toBeLessThan(4 * 1024 * 1024);
  });
});

describe.each(engines)('config streams of one team, on %s', (engine) => {
  const server = useServer(engine);

  it('when a flag changes three times with 8 streams open, then each config version is serialised once in the process, not once per stream', async () => {
    // Arrange: 8 streams that have the current config
    const team = await server().newTeam();
    const { response } = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'big0', value: 'on' } });
    expect(response.status).toBe(200);
    // JSON.stringify, watched (and still called): what turns a config of the team into text
    const stringify = vi.spyOn(JSON, 'stringify');
    for (let i = 0; i < 8; i++) {
      const { stream } = await openConfigStream(server().baseUrl, team.id, team.ingestKey);
      readers.push(stream!);
    }
    const lastIds = () => readers.map((reader) => reader.configs().at(-1)?.id);
    await expect.poll(() => new Set(lastIds()).size === 1 && lastIds()[0] !== undefined, WITHIN).toBe(true);

    // Act: three changes, each waited for on every stream
    for (const enabled of [true, false, true]) {
      const before = lastIds()[0];
      await flip(team, enabled);
      await expect.poll(() => lastIds().every((id) => id !== before) && new Set(lastIds()).size === 1, WITHIN).toBe(true);
    }

    // Assert: as many serialisations of the team's config as a message (`{"data": Config}`) as
    // versions sent, whatever the streams; and one more of each change's config, measured for its size
    const versions = new Set(readers.flatMap((reader) => reader.configs().map((config) => config.id)));
    const of = (value: unknown) => value as { team?: number; data?: { team?: number } } | undefined;
    const messages = stringify.mock.calls.filter(([value]) => of(value)?.data?.team === team.id);
    const measured = stringify.mock.calls.filter(([value]) => of(value)?.team === team.id);
    expect(versions.size).toBeGreaterThanOrEqual(4);
    expect(messages).toHaveLength(versions.size);
    expect(measured).toHaveLength(3);
  });
});
