// Webhook delivery across real server processes (the compiled server/main.ts, its worker started
// at the composition root): a process killed mid-delivery, and two processes on one PostgreSQL.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { kill, startChild, stopAllChildren } from '../support/process';
import { clientsOf, createTeamAt } from '../support/team';
import { freshStorage, type StorageEnv } from '../support/storage';
import { startReceiver, until, type Receiver } from '../support/webhooks';

const QUICK = { WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true', WEBHOOK_TIMEOUT_SECONDS: '2', WEBHOOK_RETRY_BASE_SECONDS: '0.1', WEBHOOK_RETRY_MAX_SECONDS: '0.5', WEBHOOK_POLL_SECONDS: '0.05' };

describe.each(engines)('webhook delivery by server processes on %s', (engine) => {
  let storage: { storageEnv: StorageEnv; cleanup: () => Promise<void> };
  let receiver: Receiver;
  beforeAll(async () => {
    storage = await freshStorage(engine);
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await stopAllChildren();
  });
  afterAll(async () => {
    await receiver?.close();
    await storage?.cleanup();
  });

  /** A team with an endpoint wanting flag.* at the receiver, and a flag `f` (whose creation is the first message). */
  async function arrange(baseUrl: string, key: string) {
    const team = await createTeamAt(baseUrl, storage.storageEnv);
    const { api } = clientsOf(baseUrl, team);
    const path = { team: team.id };
    const created = await api.POST('/api/teams/{team}/webhooks', { params: { path }, body: { key, url: receiver.url, event_types: ['flag.*'] } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    await api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'f', type: 'boolean' } });
    const entries = async () => (await api.GET('/api/teams/{team}/audit-log', { params: { path, query: { resource_type: 'flag', limit: 100 } } })).data!.data.map((entry) => `msg_${entry.id}`).reverse();
    return { team, path, entries };
  }

  it('when the server is killed while a receiver holds a delivery, then the restarted server delivers it again and the rest, in order', async () => {
    receiver.received.length = 0;
    let hung: string | undefined;
    receiver.answer = (request, n) => {
      if (n === 3 && hung === undefined) {
        hung = String(request.headers['webhook-id']);
        return 'hang';
      }
      return 200;
    };
    const first = await startChild(storage.storageEnv, QUICK);
    const { team, path, entries } = await arrange(first.baseUrl, 'killed');
    const { api } = clientsOf(first.baseUrl, team);
    for (let i = 0; i < 9; i++) await api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { ...path, feature: 'f' } }, body: { enabled: i % 2 === 0 } });
    const wanted = await entries();
    expect(wanted).toHaveLength(10);
    await until('the third delivery held by the receiver', () => receiver.received.length >= 3);
    await kill(first);

    await startChild(storage.storageEnv, QUICK);
    await until('every message delivered after the restart', () => new Set(receiver.ids()).size >= 10, 120_000);
    expect([...new Set(receiver.ids())]).toEqual(wanted);
    // At least once: the message in flight when the process died came again.
    expect(receiver.ids().filter((id) => id === hung).length).toBeGreaterThanOrEqual(2);
  });

  it.runIf(engine === 'postgres')('when two processes serve one database, then each message is delivered once, one at a time, in order', async () => {
    receiver.received.length = 0;
    receiver.mostAtOnce = 0;
    receiver.answer = () => 200;
    const [a, b] = [await startChild(storage.storageEnv, QUICK), await startChild(storage.storageEnv, QUICK)];
    const { team, path, entries } = await arrange(a.baseUrl, 'shared');
    for (let i = 0; i < 29; i++) {
      const { api } = clientsOf(i % 2 === 0 ? a.baseUrl : b.baseUrl, team);
      await api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { ...path, feature: 'f' } }, body: { enabled: i % 2 === 0 } });
    }
    const wanted = await entries();
    expect(wanted).toHaveLength(30);
    await until('30 messages delivered', () => new Set(receiver.ids()).size >= 30, 120_000);
    expect(receiver.ids()).toEqual(wanted);
    expect(receiver.mostAtOnce).toBe(1);
  });
});
