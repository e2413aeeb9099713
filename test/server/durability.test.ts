import { afterAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../../server/cli/admin-command';
import { openStorage, type Storage } from '../../server/storage/database';
import { settingsFromEnv } from '../../server/settings/settings';
import { engines } from '../support/engines';
import { expectStored, ingestOnce, kill, runningExperiment, sleep, startChild, stopAllChildren, type ChildServer, type Ledger } from '../support/process';
import { createTeamAt } from '../support/team';
import { freshStorage } from '../support/storage';

/**
 * What each test here proves. A SIGKILL (below) proves that nothing is acknowledged before its
 * commit and nothing is half stored — but the OS page cache survives a killed process, so it
 * cannot tell a commit on disk from one in memory. That an acknowledged commit survives power
 * loss rests on SQLite's settings — WAL, and synchronous=FULL (2): the WAL is fsynced at every
 * commit — so the server's and the admin CLI's own connections are checked for exactly those.
 * (PostgreSQL: its own fsync and synchronous_commit, which the service does not change.)
 */
describe('SQLite power-loss settings', () => {
  afterAll(stopAllChildren);

  it('when the server starts on SQLite, then its connection reports journal_mode=wal and synchronous=2 (FULL) in the start-up line', async () => {
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    try {
      const server = await startChild(storageEnv, { LOG_LEVEL: 'info' });
      const started = server
        .log()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg: string; storage?: string; durability?: unknown })
        .find((line) => line.msg.startsWith('listening on'));
      expect(started, server.log()).toMatchObject({ storage: 'sqlite', durability: { journal_mode: 'wal', synchronous: 2 } });
    } finally {
      await stopAllChildren();
      await cleanup();
    }
  });

  it('when the admin CLI runs on SQLite, then the storage it opens runs journal_mode=wal and synchronous=2 (FULL)', async () => {
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    const opened: Array<Storage['durability']> = [];
    const output: string[] = [];
    try {
      const code = await runAdmin(['create-team', '--name', 'Durable', '--email', 'durable@example.com', '--json'], {
        out: (text) => output.push(text),
        err: (text) => output.push(text),
        stdin: () => '',
        // What the CLI's entry opens (server/cli/admin.ts), watched.
        open: async () => {
          const storage = await openStorage(settingsFromEnv({ ...storageEnv }));
          opened.push(storage.durability);
          return storage;
        },
      });
      expect(code, output.join('\n')).toBe(0);
      expect(opened).toEqual([{ journal_mode: 'wal', synchronous: 2 }]);
    } finally {
      await cleanup();
    }
  });
});

/** Concurrent ingest clients (the issue: at least 16). */
const CLIENTS = 24;
/** Kill, restart and check this many times on the same storage. */
const ROUNDS = 3;
/** A round kills once this many ingests were acknowledged in it (or after LOAD_MS at most). */
const ACKS_BEFORE_KILL = 60;
const LOAD_MS = 4000;

describe.each(engines)('crash durability on %s', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await stopAllChildren();
    for (const cleanup of cleanups) await cleanup();
  });

  it(
    `when the server is SIGKILLed under ${CLIENTS} concurrent ingest clients, then after a restart on the same storage every acknowledged ingest is there and nothing is half there (${ROUNDS} kills)`,
    async () => {
      // Arrange: a server on fresh storage, a team, a running experiment on the event `goal`
      const { storageEnv, cleanup } = await freshStorage(engine);
      cleanups.push(cleanup);
      let server: ChildServer = await startChild(storageEnv);
      const team = await createTeamAt(server.baseUrl, storageEnv, 'Durability');
      await runningExperiment(server.baseUrl, team);
      const ledger: Ledger = new Map();
      const report: string[] = [];

      for (let round = 1; round <= ROUNDS; round++) {
        // Act: every client ingests its own participants, each twice (enrol + conversion, then a second conversion)
        let killed = false;
        let acks = 0;
        const unexpected: string[] = [];
        const clients = Array.from({ length: CLIENTS }, async (_, client) => {
          for (let n = 0; ; n++) {
            const key = `r${round}-c${client}-p${Math.floor(n / 2)}`;
            const sent = ledger.get(key) ?? { sent: 0, acked: 0 };
            ledger.set(key, sent);
            sent.sent++;
            const outcome = await ingestOnce(server.baseUrl, team, { participant: key, event: 'goal' });
            if (outcome.kind === 'connection-error') {
              if (!killed) unexpected.push(`${key}: ${outcome.error} before the kill`);
              return;
            }
            if (outcome.status !== 200) {
              unexpected.push(`${key}: ${outcome.status} ${JSON.stringify(outcome.body)}`);
              continue;
            }
            const body = outcome.body as { data: { assignments: Array<{ experiment: string; variant: string }> } };
            sent.acked++;
            sent.variant = body.data.assignments.find((a) => a.experiment === 'exp')?.variant;
            acks++;
            if (killed) return;
          }
        });
        const loadStarted = Date.now();
        while (acks < ACKS_BEFORE_KILL && Date.now() - loadStarted < LOAD_MS) await sleep(10);
        await sleep(Math.floor(Math.random() * 100)); // somewhere between two acknowledgements
        killed = true;
        const exit = await kill(server);
        await Promise.all(clients);
        expect(exit.signal).toBe('SIGKILL');
        expect(unexpected, server.log()).toEqual([]);
        expect(acks).toBeGreaterThan(0);

        // Assert: restarted on the same storage, everything acknowledged so far (this round and before) is there
        server = await startChild(storageEnv);
        const summary = await expectStored(expect, server, storageEnv, team, ledger);
        report.push(
          `round ${round}: killed after ${Date.now() - loadStarted} ms of load, ${acks} acks this round; ` +
            `stored ${summary.participants} participants (${summary.ackedParticipants} acknowledged, ${summary.unacknowledgedStored} in flight at a kill and stored whole), ` +
            `${summary.conversions} conversions for ${summary.ackedIngests} acknowledged ingests`,
        );
      }
      console.info(`[durability ${engine}] ${CLIENTS} clients, ${ROUNDS} SIGKILLs survived\n  ${report.join('\n  ')}`);
    },
    180_000,
  );
});
