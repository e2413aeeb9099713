// The documented 400 of every operation is what the server answers: each 400 example carries the
// request that causes it (`x-request`: a path parameter, a query or a body), which is sent to the
// real server — otherwise valid, on a team holding every path example — and the answer must be the
// example, word for word.
import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fixture, WireRequest } from '../fuzz/cases';
import { doc, operations, type Node, type Operation } from '../fuzz/spec';
import { arrangeTarget, sendWire } from '../fuzz/target';
import { useServer } from '../support/server';

interface Cause {
  path?: Record<string, string>;
  query?: string;
  body?: unknown;
}

/** The 400 examples of an operation, with their causes. */
function badRequestExamples(op: Operation): Array<{ name: string; cause: Cause; value: Node }> {
  const raw = doc.paths[op.template][op.method.toLowerCase()].responses['400'];
  const response = raw.$ref ? doc.components.responses[raw.$ref.split('/').pop()] : raw;
  // OFREP's operations answer their 400 as application/json (OFREP's error body); all others as problems.
  const media = (response.content['application/problem+json'] ?? response.content['application/json']) as Node;
  return Object.entries((media.examples ?? {}) as Record<string, Node>).map(([name, example]) => ({
    name,
    cause: example['x-request'] as Cause,
    value: example.value as Node,
  }));
}

describe("each operation's 400 example", () => {
  const server = useServer('sqlite');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let fixture: Fixture;

  beforeAll(async () => {
    ({ fixture } = await arrangeTarget(server()));
  });
  afterAll(() => agent.destroy());

  it.each(operations.map((op) => [op.label, op] as const))('%s: sending its cause answers the example', async (_label, op) => {
    const examples = badRequestExamples(op);
    expect(examples.length).toBeGreaterThan(0);
    for (const { name, cause, value } of examples) {
      expect(cause, `${name} has no x-request`).toBeDefined();
      const body = cause.body ?? op.body?.example;
      const request: WireRequest = {
        method: op.method,
        path: Object.fromEntries(op.pathParams.map((p) => [p.name, encodeURIComponent(cause.path?.[p.name] ?? fixture.present[p.name]!)])),
        query: cause.query ?? '',
        authorization: `Bearer ${fixture.token}`,
        ...(body !== undefined && { contentType: 'application/json', body: JSON.stringify(body) }),
      };

      const response = await sendWire(server().baseUrl, agent, op, request);

      expect(response.status, name).toBe(400);
      expect(JSON.parse(response.text), name).toEqual(value);
    }
  });
});
