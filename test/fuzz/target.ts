// What the fuzzer and the mock comparison share: a team arranged so that every path parameter's
// example names one of its resources, and one case sent as it goes on the wire.
import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http';
import { expect } from 'vitest';
import type { TestServer } from '../support/server';
import type { TestTeam } from '../support/team';
import type { Fixture, WireRequest } from './cases';
import { operations, type Operation } from './spec';

export interface WireResponse {
  status: number;
  contentType: string;
  headers: IncomingHttpHeaders;
  text: string;
}

export function urlPath(op: Operation, request: WireRequest): string {
  const path = op.template.replace(/\{([^}]+)\}/g, (_, name: string) => request.path[name]!);
  return request.query ? `${path}?${request.query}` : path;
}

/** Sends one request exactly as given (no normalising of the path, query or headers). */
export function sendWire(baseUrl: string, agent: Agent, op: Operation, request: WireRequest, extraHeaders: Record<string, string> = {}): Promise<WireResponse> {
  const url = new URL(baseUrl);
  const headers: Record<string, string | number> = { ...extraHeaders };
  if (request.authorization !== undefined) headers.authorization = request.authorization;
  if (request.contentType !== undefined) headers['content-type'] = request.contentType;
  const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, 'utf8');
  if (body !== undefined) headers['content-length'] = body.length;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method: request.method, path: urlPath(op, request), headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      const answer = () => ({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
      // An event stream never ends: what came until its first complete message, then the connection closed.
      const stream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (stream && Buffer.concat(chunks).includes('\n\n')) {
          resolve(answer());
          res.destroy();
        }
      });
      res.on('end', () => resolve(answer()));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A new team whose events, experiment, variants, flag and participants are the contract's path examples. */
export async function arrangeTarget(server: TestServer): Promise<{ target: TestTeam; fixture: Fixture }> {
  const target = await server.newTeam('Fuzzed');
  const path = { team: target.id };
  const experiment = { ...path, experiment: 'checkout_button' };
  const created = [
    // Its events' creations are queued for it (nothing delivers them here): delivery 1 exists. A documentation address: no DNS.
    await target.api.POST('/api/teams/{team}/webhooks', { params: { path }, body: { key: 'slack', url: 'https://203.0.113.7/hooks', event_types: ['event.created'] } }),
    await target.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } }),
    await target.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'signup', type: 'count' } }),
    await target.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'revenue', type: 'value', cap: 500 } }),
    await target.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'checkout_button', event: 'purchase' } }),
    await target.api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
      params: { path: experiment },
      body: { key: 'control', control: true, traffic: 50 },
    }),
    await target.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'green', traffic: 50 } }),
    await target.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: experiment } }),
    await target.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'new_checkout', enabled: true, value: '#00aa00' } }),
    await target.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: 'new_checkout' } }, body: { value: '#0000aa' } }),
    await target.ingest.POST('/api/teams/{team}/ingest', {
      params: { path },
      body: { participant: { key: 'user-42', notes: 'Internal tester', attributes: { plan: 'pro' } }, event: 'purchase' },
    }),
    await target.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'someone-else', event: 'signup' } }),
  ];
  for (const { response } of created) expect(response.status, response.url).toBe(200);
  // Every path parameter's example names a resource of this team, so every path exists.
  const present: Record<string, string> = { team: String(target.id) };
  for (const op of operations) for (const p of op.pathParams) if (p.name !== 'team') present[p.name] = String(p.example);
  expect(present).toEqual({
    team: String(target.id),
    event: 'purchase',
    experiment: 'checkout_button',
    variant: 'green',
    feature: 'new_checkout',
    participant: 'user-42',
    webhook: 'slack',
    delivery: '1',
    rollout: '1',
  });
  const fixture: Fixture = {
    teamId: target.id,
    token: target.token,
    present,
    existing: {
      event: new Set(['purchase', 'signup']),
      experiment: new Set(['checkout_button']),
      variant: new Set(['control', 'green']),
      feature: new Set(['new_checkout']),
      participant: new Set(['user-42', 'someone-else']),
      webhook: new Set(['slack']),
      delivery: new Set(['1', '2', '3']),
      rollout: new Set(['1']),
    },
  };
  return { target, fixture };
}
