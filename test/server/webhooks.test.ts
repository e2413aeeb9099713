import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { components } from 'experimentation-api';
import { ADMIN_CLI, record } from '../../server/audit/service';
import { engines } from '../support/engines';
import type { TestTeam } from '../support/team';
import { QUICK, startReceiver, startWebhookServer, until, type Receiver } from '../support/webhooks';
import type { TestServer } from '../support/server';

type AuditEntry = components['schemas']['AuditEntry'];

describe.each(engines)('webhooks on %s', (engine) => {
  let server: TestServer;
  let team: TestTeam;
  let receiver: Receiver;

  beforeAll(async () => {
    server = await startWebhookServer(engine);
    team = await server.newTeam();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await server?.close();
  });

  const path = () => ({ team: team.id });
  let hooks = 0;
  const create = (body: Omit<components['schemas']['WebhookEndpointCreate'], 'key'> & { key?: string }, as = team) =>
    as.api.POST('/api/teams/{team}/webhooks', { params: { path: { team: as.id } }, body: { key: `hook_${++hooks}`, ...body } });
  const deliveries = async (webhook: string, as = team) => (await as.api.GET('/api/teams/{team}/webhooks/{webhook}/deliveries', { params: { path: { team: as.id, webhook }, query: { limit: 100 } } })).data!.data;
  const auditLog = async (as = team) => (await as.api.GET('/api/teams/{team}/audit-log', { params: { path: { team: as.id }, query: { limit: 100 } } })).data!.data;
  const flagUpdate = (key: string, enabled: boolean) => team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { ...path(), feature: key } }, body: { enabled } });

  it('when an endpoint is created, read, changed, given a new secret and deleted, then the secret shows only at creation and rotation, and each change is audited without it', async () => {
    const created = await create({ url: receiver.url, event_types: ['flag.updated'], enabled: false, description: 'Slack' });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const endpoint = created.data!.data;
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const webhook = endpoint.key;
    const got = (await team.api.GET('/api/teams/{team}/webhooks/{webhook}', { params: { path: { ...path(), webhook } } })).data!.data;
    expect(got).toEqual({ key: webhook, url: receiver.url, event_types: ['flag.updated'], enabled: false, description: 'Slack', disabled_reason: null, created_at: endpoint.created_at, updated_at: endpoint.updated_at });
    expect((await team.api.GET('/api/teams/{team}/webhooks', { params: { path: path() } })).data!.data).toEqual([got]);

    const updated = await team.api.PUT('/api/teams/{team}/webhooks/{webhook}', { params: { path: { ...path(), webhook } }, body: { event_types: ['flag.*'], description: null } });
    expect(updated.data!.data).toMatchObject({ event_types: ['flag.*'], description: null, enabled: false });
    const rotated = (await team.api.POST('/api/teams/{team}/webhooks/{webhook}/rotate-secret', { params: { path: { ...path(), webhook } } })).data!.data;
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect((await team.api.DELETE('/api/teams/{team}/webhooks/{webhook}', { params: { path: { ...path(), webhook } } })).data!.data.key).toBe(webhook);
    expect((await team.api.GET('/api/teams/{team}/webhooks/{webhook}', { params: { path: { ...path(), webhook } } })).response.status).toBe(404);

    const entries = (await auditLog()).filter((entry) => entry.resource_type === 'webhook' && entry.resource_key === webhook);
    expect(entries.map((entry) => entry.action)).toEqual(['deleted', 'issued', 'updated', 'created']);
    expect(entries[2]).toMatchObject({ before: { event_types: ['flag.updated'], description: 'Slack' }, after: { event_types: ['flag.*'], description: null } });
    const text = JSON.stringify(entries);
    expect(text).not.toContain(endpoint.secret.slice(6));
    expect(text).not.toContain(rotated.secret.slice(6));
  });

  it('when a team has 20 endpoints, then a 21st is 409 limit-reached naming url, and nothing is stored', async () => {
    const other = await server.newTeam();
    for (let i = 0; i < 20; i++) expect((await create({ url: `${receiver.url}/${i}`, event_types: ['flag.created'], enabled: false }, other)).response.status).toBe(200);
    const refused = await create({ url: `${receiver.url}/20`, event_types: ['flag.created'] }, other);
    expect(refused.response.status).toBe(409);
    expect(refused.error).toMatchObject({ type: 'urn:experimentation:problem:limit-reached', errors: [{ path: '/body/url' }] });
    expect((await other.api.GET('/api/teams/{team}/webhooks', { params: { path: { team: other.id } } })).data!.data).toHaveLength(20);
  });

  it('when an event type is unknown or the url is not http(s) or holds a password, then it is 400 naming the field', async () => {
    const unknown = await create({ url: receiver.url, event_types: ['flag.flipped' as 'flag.updated'] });
    expect(unknown.response.status).toBe(400);
    expect(unknown.error?.errors?.[0]?.path).toBe('/body/event_types/0');
    for (const url of ['ftp://127.0.0.1/hook', 'http://user:pw@127.0.0.1/hook']) {
      const refused = await create({ url, event_types: ['flag.updated'] });
      expect(refused.response.status, url).toBe(400);
      expect(refused.error?.errors?.[0]?.path, url).toBe('/body/url');
    }
  });

  it('when changes of every kind are made, then each wanted one is delivered once, in order, its body the audit entry, signed so that standardwebhooks verifies it', async () => {
    receiver.received.length = 0;
    const [newest] = await auditLog();
    const all = await create({ url: receiver.url, event_types: ['event.*', 'experiment.*', 'variant.*', 'flag.*', 'participant.*', 'enrolment.*', 'webhook.*', 'member.*'] });
    const { key: webhook, secret } = all.data!.data;
    const api = team.api;
    const p = path();
    await api.POST('/api/teams/{team}/events', { params: { path: p }, body: { key: 'goal' } });
    await api.PUT('/api/teams/{team}/events/{event}', { params: { path: { ...p, event: 'goal' } }, body: { description: 'Bought' } });
    await api.POST('/api/teams/{team}/experiments', { params: { path: p }, body: { key: 'exp', event: 'goal' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...p, experiment: 'exp' } }, body: { key: 'control', control: true } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...p, experiment: 'exp' } }, body: { key: 'treatment' } });
    await api.PUT('/api/teams/{team}/experiments/{experiment}/variants/{variant}', { params: { path: { ...p, experiment: 'exp', variant: 'treatment' } }, body: { description: 'Green' } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...p, experiment: 'exp' } } });
    await api.POST('/api/teams/{team}/features', { params: { path: p }, body: { key: 'flag', type: 'boolean' } });
    await flagUpdate('flag', true);
    await api.POST('/api/teams/{team}/participants', { params: { path: p }, body: { key: 'ana' } });
    await api.PUT('/api/teams/{team}/participants/{participant}', { params: { path: { ...p, participant: 'ana' } }, body: { notes: 'VIP' } });
    await api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { ...p, participant: 'ana' } } });
    await api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { ...p, experiment: 'exp' } } });
    await api.DELETE('/api/teams/{team}/features/{feature}', { params: { path: { ...p, feature: 'flag' } } });
    await api.PUT('/api/teams/{team}/webhooks/{webhook}', { params: { path: { ...p, webhook } }, body: { description: 'everything' } });

    const written = (await auditLog()).filter((entry) => Number(entry.id) > Number(newest!.id)).reverse();
    // The endpoint's own creation first: it wants webhook.*.
    expect(written.length).toBe(16);
    await until('every change delivered', () => new Set(receiver.ids()).size >= written.length);
    expect([...new Set(receiver.ids())]).toEqual(written.map((entry) => `msg_${entry.id}`));
    // At least once: a repeat (an attempt that timed out on a loaded machine) carries the same webhook-id and body.
    const verifier = new Webhook(secret);
    for (const request of receiver.received) {
      const verified = verifier.verify(request.body, request.headers as Record<string, string>) as AuditEntry;
      expect(`msg_${verified.id}`).toBe(request.headers['webhook-id']);
      expect(verified).toEqual(written.find((entry) => entry.id === verified.id));
    }
    expect(() => new Webhook(secret).verify(`${receiver.received[0]!.body} `, receiver.received[0]!.headers as Record<string, string>)).toThrow();
    const listed = await deliveries(webhook);
    expect(listed.every((delivery) => delivery.status === 'delivered' && delivery.attempts >= 1 && delivery.next_attempt_at === null)).toBe(true);
    expect(listed.map((delivery) => delivery.event_type).reverse()).toEqual(written.map((entry) => `${entry.resource_type}.${entry.action}`));
    await api.DELETE('/api/teams/{team}/webhooks/{webhook}', { params: { path: { ...p, webhook } } });
  });

  it('when an endpoint wants only flag.updated, then only flag updates are queued for it', async () => {
    const other = await server.newTeam();
    const webhook = (await create({ url: receiver.url, event_types: ['flag.updated'] }, other)).data!.data.key;
    const p = { team: other.id };
    await other.api.POST('/api/teams/{team}/features', { params: { path: p }, body: { key: 'only', type: 'boolean' } });
    await other.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { ...p, feature: 'only' } }, body: { enabled: true } });
    await other.api.DELETE('/api/teams/{team}/features/{feature}', { params: { path: { ...p, feature: 'only' } } });
    expect((await deliveries(webhook, other)).map((delivery) => delivery.event_type)).toEqual(['flag.updated']);
  });

  it('when a change is rolled back after its audit entry was written, then nothing is queued or delivered', async () => {
    const other = await server.newTeam();
    const webhook = (await create({ url: receiver.url, event_types: ['team.*', 'flag.*'] }, other)).data!.data.key;
    await expect(
      server.storage.db.transaction().execute(async (trx) => {
        await record(trx, other.id, ADMIN_CLI, { resource: 'team', key: String(other.id), action: 'updated', before: { name: 'a' }, after: { name: 'rolled back' } });
        throw new Error('the change fails after its entry');
      }),
    ).rejects.toThrow('the change fails');
    await other.api.POST('/api/teams/{team}/features', { params: { path: { team: other.id } }, body: { key: 'after' } });
    await until('the committed change delivered', async () => (await deliveries(webhook, other)).some((delivery) => delivery.status === 'delivered'));
    expect((await deliveries(webhook, other)).map((delivery) => delivery.event_type)).toEqual(['flag.created']);
    expect(receiver.received.some((request) => request.body.includes('rolled back'))).toBe(false);
  });

  it('when the secret is rotated twice, then each delivery is signed with the current and the previous secret, which standardwebhooks verifies with either, and never with the one before', async () => {
    const rotating = await startReceiver();
    const created = (await create({ url: rotating.url, event_types: ['flag.updated'] })).data!.data;
    const rotate = async () => (await team.api.POST('/api/teams/{team}/webhooks/{webhook}/rotate-secret', { params: { path: { ...path(), webhook: created.key } } })).data!.data.secret;
    await team.api.POST('/api/teams/{team}/features', { params: { path: path() }, body: { key: 'rotated', type: 'boolean' } });
    const deliveredWith = async (enabled: boolean, count: number) => {
      await flagUpdate('rotated', enabled);
      await until(`${count} delivered`, () => new Set(rotating.ids()).size >= count);
      return rotating.received.at(-1)!;
    };
    const secrets = [created.secret, await rotate()];
    const first = await deliveredWith(true, 1);
    expect(String(first.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of secrets) expect(() => new Webhook(secret).verify(first.body, first.headers as Record<string, string>)).not.toThrow();
    secrets.push(await rotate());
    const second = await deliveredWith(false, 2);
    for (const secret of secrets.slice(1)) expect(() => new Webhook(secret).verify(second.body, second.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(secrets[0]!).verify(second.body, second.headers as Record<string, string>)).toThrow();
    await team.api.DELETE('/api/teams/{team}/webhooks/{webhook}', { params: { path: { ...path(), webhook: created.key } } });
    await rotating.close();
  });

  describe('delivery failures', () => {
    let other: TestTeam;
    let failing: Receiver;
    beforeAll(async () => {
      other = await server.newTeam();
      failing = await startReceiver();
      await other.api.POST('/api/teams/{team}/features', { params: { path: { team: other.id } }, body: { key: 'f', type: 'boolean' } });
    });
    afterAll(async () => {
      await failing.close();
    });
    const update = (enabled: boolean) => other.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: other.id, feature: 'f' } }, body: { enabled } });
    const endpointFor = async (url: string) => (await create({ url, event_types: ['flag.updated'] }, other)).data!.data.key;
    const remove = (webhook: string) => other.api.DELETE('/api/teams/{team}/webhooks/{webhook}', { params: { path: { team: other.id, webhook } } });

    it('when the receiver answers 503 twice and then 200, then the third attempt delivers it, with the same webhook-id each time', async () => {
      failing.received.length = 0;
      failing.answer = (_request, n) => (n <= 2 ? 503 : 200);
      const webhook = await endpointFor(failing.url);
      await update(true);
      await until('delivered after retries', async () => (await deliveries(webhook, other))[0]?.status === 'delivered');
      const [delivery] = await deliveries(webhook, other);
      expect(delivery).toMatchObject({ attempts: 3, last_status: 200, last_error: null });
      expect(new Set(failing.ids()).size).toBe(1);
      expect(failing.ids()).toHaveLength(3);
      await remove(webhook);
    });

    it('when the receiver answers 410, then the endpoint is disabled with the reason, and later changes are not queued for it', async () => {
      failing.answer = () => 410;
      const webhook = await endpointFor(failing.url);
      await update(false);
      await until('disabled', async () => (await other.api.GET('/api/teams/{team}/webhooks/{webhook}', { params: { path: { team: other.id, webhook } } })).data!.data.enabled === false);
      const endpoint = (await other.api.GET('/api/teams/{team}/webhooks/{webhook}', { params: { path: { team: other.id, webhook } } })).data!.data;
      expect(endpoint.disabled_reason).toMatch(/410 Gone/);
      expect((await deliveries(webhook, other))[0]).toMatchObject({ status: 'failed', last_status: 410 });
      await update(true);
      expect(await deliveries(webhook, other)).toHaveLength(1);
      await remove(webhook);
    });

    it('when the receiver redirects, then the redirect is not followed and the attempt counts as failed', async () => {
      const target = await startReceiver();
      failing.answer = (_request, _n, res) => {
        res.writeHead(307, { location: target.url }).end();
        return 307;
      };
      const webhook = await endpointFor(failing.url);
      await update(false);
      await until('two attempts', async () => ((await deliveries(webhook, other))[0]?.attempts ?? 0) >= 2);
      const [delivery] = await deliveries(webhook, other);
      expect(delivery).toMatchObject({ status: 'pending', last_status: 307 });
      expect(delivery!.last_error).toMatch(/redirects are not followed/);
      expect(delivery!.next_attempt_at).not.toBeNull();
      expect(target.received).toHaveLength(0);
      await remove(webhook);
      await target.close();
    });

    it('when a delivery is redelivered by hand, then the same message is sent again at the end of the queue', async () => {
      failing.received.length = 0;
      failing.answer = () => 200;
      const webhook = await endpointFor(failing.url);
      await update(true);
      await until('delivered', async () => (await deliveries(webhook, other))[0]?.status === 'delivered');
      const [first] = await deliveries(webhook, other);
      const again = await other.api.POST('/api/teams/{team}/webhooks/{webhook}/deliveries/{delivery}/redeliver', { params: { path: { team: other.id, webhook, delivery: String(first!.number) } } });
      expect(again.data!.data).toMatchObject({ status: 'pending', attempts: 0, message_id: first!.message_id, event_type: 'flag.updated' });
      await until('delivered again', () => failing.received.length >= 2);
      expect(failing.ids()).toEqual([first!.message_id, first!.message_id]);
      expect(failing.received[1]!.body).toBe(failing.received[0]!.body);
      const missing = await other.api.POST('/api/teams/{team}/webhooks/{webhook}/deliveries/{delivery}/redeliver', { params: { path: { team: other.id, webhook, delivery: '9999999' } } });
      expect(missing.response.status).toBe(404);
      await remove(webhook);
    });

    it('when the receiver fails at random, then every message still arrives, first arrivals in the order of the changes', async () => {
      failing.received.length = 0;
      let calls = 0;
      failing.answer = () => (++calls % 3 === 0 ? 500 : 200);
      const webhook = await endpointFor(failing.url);
      const { enabled } = (await other.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { team: other.id, feature: 'f' } } })).data!.data;
      for (let i = 0; i < 20; i++) await update(i % 2 === 0 ? !enabled : enabled); // each update flips the flag
      const entries = (await auditLog(other)).filter((entry) => entry.resource_type === 'flag' && entry.action === 'updated').slice(0, 20).reverse();
      await until('all 20 delivered', async () => (await deliveries(webhook, other)).filter((d) => d.status === 'delivered').length === 20);
      expect([...new Set(failing.ids())]).toEqual(entries.map((entry) => `msg_${entry.id}`));
      expect(failing.mostAtOnce).toBe(1);
      await remove(webhook);
    });
  });
});

describe.each(engines)('webhook address safety on %s', (engine) => {
  let server: TestServer;
  let team: TestTeam;
  let receiver: Receiver;
  beforeAll(async () => {
    // The API refuses private addresses; the delivery worker is the operator's test one, which allows them — but see the rebinding case.
    server = await startWebhookServer(engine, { allowPrivateAddresses: false, timeoutMs: 2000, retryBaseMs: 100, retryMaxMs: 400, retryWindowMs: 86_400_000, pollMs: 50, secretOverlapMs: 0 }, { worker: false });
    team = await server.newTeam();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await server?.close();
  });

  it.each(['http://127.0.0.1:9/hook', 'http://localhost/hook', 'http://10.1.2.3/hook', 'http://192.168.0.10/hook', 'http://172.20.0.1/hook', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/hook', 'http://[::ffff:127.0.0.1]/hook', 'http://[fd00:ec2::254]/hook', 'http://0.0.0.0/hook'])(
    'when the url is %s, then creating the endpoint is 400 naming url, and nothing is stored',
    async (url) => {
      const refused = await team.api.POST('/api/teams/{team}/webhooks', { params: { path: { team: team.id } }, body: { key: 'private', url, event_types: ['flag.updated'] } });
      expect(refused.response.status).toBe(400);
      expect(refused.error).toMatchObject({ errors: [{ path: '/body/url', message: expect.stringMatching(/^resolves to .+ address$/) }] });
      expect((await team.api.GET('/api/teams/{team}/webhooks', { params: { path: { team: team.id } } })).data!.data).toEqual([]);
    },
  );
});

describe.each(engines)('webhook delivery to a name re-pointed at a private address on %s', (engine) => {
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    // The endpoint was taken (the API allows private addresses here), but the worker checks again before each delivery and does not.
    server = await startWebhookServer(engine, QUICK, { worker: { ...QUICK, allowPrivateAddresses: false } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await server?.close();
  });

  it('when a delivery is due, then it is refused on the address it would connect to, retried, and nothing reaches the receiver', async () => {
    const team = await server.newTeam();
    const path = { team: team.id };
    expect((await team.api.POST('/api/teams/{team}/webhooks', { params: { path }, body: { key: 'rebound', url: receiver.url, event_types: ['flag.created'] } })).response.status).toBe(200);
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'f' } });
    const deliveries = async () => (await team.api.GET('/api/teams/{team}/webhooks/{webhook}/deliveries', { params: { path: { ...path, webhook: 'rebound' } } })).data!.data;
    await until('two refused attempts', async () => ((await deliveries())[0]?.attempts ?? 0) >= 2);
    const [delivery] = await deliveries();
    expect(delivery).toMatchObject({ status: 'pending', last_status: null, last_error: 'refused: resolves to 127.0.0.1, a loopback address' });
    expect(receiver.received).toHaveLength(0);
  });
});

describe.each(engines)('webhook secret rotated with no overlap on %s', (engine) => {
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    server = await startWebhookServer(engine, { ...QUICK, secretOverlapMs: 0 });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await server?.close();
  });

  it('when WEBHOOK_SECRET_OVERLAP_SECONDS is 0 and the secret is rotated, then deliveries are signed with the new secret alone', async () => {
    const team = await server.newTeam();
    const p = { team: team.id };
    const created = (await team.api.POST('/api/teams/{team}/webhooks', { params: { path: p }, body: { key: 'hook', url: receiver.url, event_types: ['flag.created'] } })).data!.data;
    const rotated = (await team.api.POST('/api/teams/{team}/webhooks/{webhook}/rotate-secret', { params: { path: { ...p, webhook: 'hook' } } })).data!.data.secret;
    await team.api.POST('/api/teams/{team}/features', { params: { path: p }, body: { key: 'f', type: 'boolean' } });
    await until('delivered', () => receiver.received.length >= 1);
    const [request] = receiver.received;
    expect(String(request!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(rotated).verify(request!.body, request!.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(created.secret).verify(request!.body, request!.headers as Record<string, string>)).toThrow();
  });
});
