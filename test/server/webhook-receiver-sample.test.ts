// The receiver that docs/audit-log-and-webhooks.md gives in TypeScript, taken from the page as it is
// (only its port changed), type-checked against the installed package and run against real deliveries.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import type { TestTeam } from '../support/team';
import { startWebhookServer, until } from '../support/webhooks';
import type { TestServer } from '../support/server';

const root = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(join(root, 'docs/audit-log-and-webhooks.md'), 'utf8');
const section = page.slice(page.indexOf('### Verifying a delivery (TypeScript)'));
const sample = /```ts\n([\s\S]*?)```/.exec(section)![1]!;

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => probe.once('listening', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function post(port: number, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the docs\' TypeScript webhook receiver', () => {
  const folder = join(root, 'node_modules/.cache');
  let scratch: string;
  let file: string;
  beforeAll(() => {
    mkdirSync(folder, { recursive: true });
    scratch = mkdtempSync(join(folder, 'receiver-sample-'));
    file = join(scratch, 'receiver.ts');
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('when it is type-checked against the installed package, then it compiles as written', () => {
    expect(sample).toContain('.listen(8080)');
    writeFileSync(file, sample);
    const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node', file], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });

  describe.each(engines)('on %s', (engine) => {
    let server: TestServer;
    let team: TestTeam;
    let receiver: ChildProcess | undefined;
    let output = '';
    let port: number;

    beforeAll(async () => {
      server = await startWebhookServer(engine);
      team = await server.newTeam();
      port = await freePort();
    });
    afterAll(async () => {
      receiver?.kill();
      await server?.close();
    });

    it('when a flag is changed and the delivery then redelivered by hand, then it verifies the signature, logs the change once, and refuses a forged delivery with 400', async () => {
      const path = { team: team.id };
      const created = await team.api.POST('/api/teams/{team}/webhooks', { params: { path }, body: { key: 'sample', url: `http://127.0.0.1:${port}/`, event_types: ['flag.updated'] } });
      expect(created.response.status, JSON.stringify(created.error)).toBe(200);

      const script = join(scratch, `receiver-${engine}.ts`);
      writeFileSync(script, sample.replace('.listen(8080)', `.listen(${port})`));
      receiver = spawn(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), script], { env: { ...process.env, WEBHOOK_SECRET: created.data!.data.secret }, stdio: ['ignore', 'pipe', 'pipe'] });
      receiver.stdout!.on('data', (chunk: Buffer) => void (output += chunk.toString()));
      receiver.stderr!.on('data', (chunk: Buffer) => void (output += chunk.toString()));
      await until('the sample listens', async () => (await post(port, {}, '{}').catch(() => 0)) === 400, 120_000);

      await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'checkout', type: 'boolean' } });
      await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { ...path, feature: 'checkout' } }, body: { enabled: true } });
      const deliveries = async () => (await team.api.GET('/api/teams/{team}/webhooks/{webhook}/deliveries', { params: { path: { ...path, webhook: 'sample' } } })).data!.data;
      await until('delivered', async () => (await deliveries())[0]?.status === 'delivered');
      const logged = `${team.email} updated flag checkout { enabled: true }`;
      expect(output).toContain(logged);

      // The same message again: verified, answered 204, not logged twice
      const [first] = await deliveries();
      await team.api.POST('/api/teams/{team}/webhooks/{webhook}/deliveries/{delivery}/redeliver', { params: { path: { ...path, webhook: 'sample', delivery: String(first!.number) } } });
      await until('redelivered', async () => (await deliveries()).filter((delivery) => delivery.status === 'delivered').length === 2);
      expect(output.split(logged)).toHaveLength(2);

      const forged = await post(port, { 'webhook-id': 'msg_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,' + Buffer.alloc(32).toString('base64') }, JSON.stringify({ action: 'deleted' }));
      expect(forged).toBe(400);
      expect(output).not.toContain('deleted');
    });
  });
});
