// The headers the contract declares on a response are on the server's real answers: every
// operation's fixed cases (bad credentials, paths, queries and bodies: 400, 401, 403, 404, 413,
// 415, …: two of each kind) and its valid read, a 429 from a small budget, each checked against what the document
// declares for that operation and status — present, and a value the header's schema allows.
import { Agent, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedCases, type Case, type Fixture, type WireRequest } from '../fuzz/cases';
import { child, deref, doc, operations, validatorAt, type Node, type Operation } from '../fuzz/spec';
import { arrangeTarget, sendWire } from '../fuzz/target';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

/** What of `headers` breaks what the document declares on the `status` answer of `op`. */
function headerBreaches(op: Operation, status: number, headers: IncomingHttpHeaders): string[] {
  const responsePointer = child('#/paths', op.template, op.method.toLowerCase(), 'responses', String(status));
  const raw = doc.paths[op.template][op.method.toLowerCase()].responses[String(status)] as Node | undefined;
  if (!raw) return [`${status} is not documented`];
  const { node: response, pointer } = deref(raw, responsePointer);
  const declared = Object.entries((response.headers ?? {}) as Node);
  if (declared.length === 0) return [`${status} declares no headers`];
  return declared.flatMap(([name, header]) => {
    const value = headers[name.toLowerCase()];
    if (typeof value !== 'string') return [`${status}: ${name} is missing`];
    const { node, pointer: headerPointer } = deref(header as Node, child(pointer, 'headers', name));
    const typed = node.schema?.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value;
    return validatorAt(child(headerPointer, 'schema'))(typed) ? [] : [`${status}: ${name} '${value}' breaks its schema`];
  });
}

/** The first two cases of each kind and expected status: every kind of answer, without the whole fuzz suite's load. */
function sample(cases: Case[]): Case[] {
  const taken = new Map<string, number>();
  return cases.filter((c) => {
    const kind = `${c.status}|${c.label.split(/[:\s]/)[0]}`;
    taken.set(kind, (taken.get(kind) ?? 0) + 1);
    return taken.get(kind)! <= 2;
  });
}

describe.each(engines)('the declared response headers on %s', (engine) => {
  const server = useServer(engine);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let target: TestTeam;
  let fixture: Fixture;

  beforeAll(async () => {
    ({ target, fixture } = await arrangeTarget(server()));
  });
  afterAll(() => agent.destroy());

  it('when every operation is sent its failing cases and its valid read, then each answer carries the headers its response declares', async () => {
    const statuses = new Set<number>();
    let sent = 0;
    const failures: string[] = [];
    for (const op of operations) {
      const cases = sample(fixedCases(op, fixture).filter((c) => c.mustFail || op.isSafe));
      const valid = cases[0]!.request;
      const refused = (label: string, request: WireRequest) => cases.push({ label, request, mustFail: true, absent: [] });
      // The ingest key where it is refused: 403, nothing done.
      if (!op.isPublic && !op.acceptsIngestKey) refused('the ingest key', { ...valid, authorization: `Bearer ${target.ingestKey}` });
      if (op.body) {
        const authorization = `Bearer ${op.acceptsIngestKey ? target.ingestKey : target.token}`;
        refused('a text body', { ...valid, authorization, contentType: 'text/plain', body: 'x' });
        refused('a body over 64 KiB', { ...valid, authorization, contentType: 'application/json', body: JSON.stringify({ key: 'a'.repeat(1_100_000) }) });
      }
      for (const c of cases) {
        const response = await sendWire(server().baseUrl, agent, op, c.request);
        sent++;
        statuses.add(response.status);
        failures.push(...headerBreaches(op, response.status, response.headers).map((breach) => `${op.label} — ${c.label}: ${breach}`));
      }
    }

    expect(failures.slice(0, 20), `${failures.length} failures`).toEqual([]);
    expect(sent).toBeGreaterThan(200);
    expect([...statuses]).toEqual(expect.arrayContaining([200, 400, 401, 403, 404, 409, 413, 415]));
  });

  describe('with a budget of 2 requests per client address', () => {
    const app = useServer(() => ({ beside: server(), app: { rateLimit: { enabled: true, windowSeconds: 3600, perCredential: 2, perAddress: 2 } } }));

    it('when the budget is used up, then the 429 carries the headers its response declares, Retry-After among them', async () => {
      const health = operations.find((op) => op.operationId === 'health_get')!;
      const request = { method: 'GET', path: {}, query: '' };
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await sendWire(app().baseUrl, agent, health, request));

      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 429]);
      for (const answer of answers) expect(headerBreaches(health, answer.status, answer.headers)).toEqual([]);
      expect(answers[2]!.headers['retry-after']).toMatch(/^\d+$/);
    });
  });
});
