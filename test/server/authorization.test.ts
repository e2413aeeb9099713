import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { engines, useServer } from '../support/engines';
import type { TestTeam } from '../support/server';

/**
 * Every operation of the bundled contract × every credential that must not (or only just)
 * reach it. Generated from generated/openapi.json, so an added operation is covered too.
 */

type Json = Record<string, unknown>;
interface SpecOperation {
  operationId: string;
  summary: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<Json>;
  requestBody?: Json;
  responses: Record<string, unknown>;
}
interface Spec {
  security: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, SpecOperation>>;
  components: Record<string, Record<string, Json>>;
}

const spec = JSON.parse(readFileSync(fileURLToPath(new URL('../../generated/openapi.json', import.meta.url)), 'utf8')) as Spec;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Follows a local `#/components/...` reference of the bundled document. */
function deref<T = Json>(value: Json): T {
  const ref = value.$ref;
  if (typeof ref !== 'string') return value as T;
  const target = ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, part) => (node as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
  return deref<T>(target as Json);
}

interface Operation {
  method: string;
  template: string;
  operationId: string;
  /** Path parameter name → the example the contract gives for it. */
  pathExamples: Record<string, unknown>;
  /** The application/json request example, when the operation takes a body. */
  bodyExample?: unknown;
  documented: Set<number>;
  isPublic: boolean;
  acceptsIngestKey: boolean;
  teamScoped: boolean;
}

const operations: Operation[] = Object.entries(spec.paths).flatMap(([template, item]) =>
  METHODS.filter((method) => item[method]).map((method) => {
    const op = item[method];
    const parameters = [...((item.parameters as unknown as Json[]) ?? []), ...(op.parameters ?? [])].map((p) => deref<Json>(p));
    const pathExamples = Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, p.example]));
    const body = op.requestBody ? deref<{ content: Record<string, { example?: unknown }> }>(op.requestBody) : undefined;
    const security = op.security ?? spec.security;
    return {
      method: method.toUpperCase(),
      template,
      operationId: op.operationId,
      pathExamples,
      bodyExample: body?.content['application/json']?.example,
      documented: new Set(Object.keys(op.responses).map(Number)),
      isPublic: security.some((requirement) => Object.keys(requirement).length === 0),
      acceptsIngestKey: security.some((requirement) => 'ingestKey' in requirement),
      teamScoped: template.includes('{team}'),
    };
  }),
);

type Credential = 'no credential' | "another team's API token" | "the team's ingest key" | "another team's ingest key";
const credentials: Credential[] = ['no credential', "another team's API token", "the team's ingest key", "another team's ingest key"];

/** The status the contract's rules (info.description, Authentication) give for the pair. */
function expectedStatus(op: Operation, credential: Credential): number {
  if (op.isPublic) return 200; // health: no credential needed, any valid one accepted
  const isConfig = op.operationId === 'config_get';
  switch (credential) {
    case 'no credential':
      return 401;
    case "another team's API token":
      if (!op.teamScoped) return 200; // the caller's own user, current team, teams
      return isConfig ? 403 : 404;
    case "the team's ingest key":
      return op.acceptsIngestKey ? 200 : 403;
    case "another team's ingest key":
      if (!op.acceptsIngestKey) return 403;
      return isConfig ? 403 : 404;
  }
}

/** Every path parameter's example across the contract: event, experiment, variant, feature, participant. */
const examples = Object.fromEntries(operations.flatMap((op) => Object.entries(op.pathExamples))) as Record<string, string>;

const cases = operations.flatMap((op) =>
  credentials.map((credential) => ({ op, credential, label: `${op.method} ${op.template}`, status: expectedStatus(op, credential) })),
);

// The resources the operations' path examples name, created in the target team so every path exists.
const EXAMPLE_VARIANTS = [
  { key: 'control', control: true, traffic: 50 },
  { key: 'green', traffic: 50 },
];

describe('the bundled contract', () => {
  it('when it is read, then it has the 38 operations this table covers', () => {
    expect(operations).toHaveLength(38);
    expect(new Set(operations.map((op) => op.operationId)).size).toBe(38);
  });
});

describe.each(engines)('authorization on %s', (engine) => {
  const server = useServer(engine);
  let target: TestTeam;
  let other: TestTeam;
  let before: unknown;

  /** Everything of the target team a member can read, in one comparable value. */
  async function snapshot(): Promise<unknown> {
    const get = async (path: string) => {
      const response = await fetch(server().baseUrl + path, { headers: { authorization: `Bearer ${target.token}` } });
      expect(response.status, path).toBe(200);
      return ((await response.json()) as { data: unknown }).data;
    };
    const team = (await get(`/api/teams/${target.id}?include=events,experiments.variants,participants,features`)) as {
      experiments: Array<{ key: string; variants: Array<{ key: string }> }>;
    };
    const statistics = [];
    for (const experiment of team.experiments) {
      for (const variant of experiment.variants) {
        statistics.push(await get(`/api/teams/${target.id}/experiments/${experiment.key}/variants/${variant.key}/statistics`));
      }
    }
    const config = await get(`/api/teams/${target.id}/config`);
    return { team, statistics, config };
  }

  function urlOf(op: Operation): string {
    const path = op.template.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(String(name === 'team' ? target.id : op.pathExamples[name])),
    );
    return server().baseUrl + path;
  }

  function headerOf(credential: Credential): Record<string, string> {
    switch (credential) {
      case 'no credential':
        return {};
      case "another team's API token":
        return { authorization: `Bearer ${other.token}` };
      case "the team's ingest key":
        return { authorization: `Bearer ${target.ingestKey}` };
      case "another team's ingest key":
        return { authorization: `Bearer ${other.ingestKey}` };
    }
  }

  beforeAll(async () => {
    target = await server().newTeam('Target');
    other = await server().newTeam('Other');
    const path = { team: target.id };
    const created = [
      await target.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: examples.event } }),
      await target.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'signup' } }),
      await target.api.POST('/api/teams/{team}/experiments', {
        params: { path },
        body: { key: examples.experiment, event: examples.event },
      }),
      ...(await Promise.all(
        EXAMPLE_VARIANTS.map((body) =>
          target.api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
            params: { path: { ...path, experiment: examples.experiment } },
            body,
          }),
        ),
      )),
      await target.api.POST('/api/teams/{team}/experiments/{experiment}/start', {
        params: { path: { ...path, experiment: examples.experiment } },
      }),
      await target.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: examples.feature, enabled: true } }),
      await target.ingest.POST('/api/teams/{team}/ingest', {
        params: { path },
        body: { participant: examples.participant, event: examples.event },
      }),
      await target.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'someone-else' } }),
    ];
    for (const { response } of created) expect(response.status, response.url).toBe(200);
    expect(EXAMPLE_VARIANTS.map((v) => v.key)).toContain(examples.variant);
    before = await snapshot();
  });

  it.each(cases)('when $label is called with $credential, then $status', async ({ op, credential, status }) => {
    // The request example where there is one — so a breach would change something. Only the one
    // request that is meant to succeed and write (ingest with the team's key) re-reports the
    // already enrolled participant, which changes nothing the snapshot sees.
    const succeedsAndWrites = status === 200 && op.method !== 'GET';
    const body = succeedsAndWrites ? { participant: examples.participant } : op.bodyExample;
    const response = await fetch(urlOf(op), {
      method: op.method,
      headers: { ...headerOf(credential), ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    expect(response.status, text).toBe(status);
    expect(op.documented.has(response.status), `${response.status} is documented on ${op.operationId}`).toBe(true);
    if (status >= 400) {
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(text)).toMatchObject({ status, title: expect.any(String), detail: expect.any(String), type: expect.any(String) });
    }
    if (status === 401) expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('when every operation was tried with every credential, then nothing in the target team changed', async () => {
    // The one authorized write, ingest with the team's key, re-reported a known participant
    // without notes or attributes: documented as no update, so it must not show here either.
    expect(await snapshot(), 'the target team after all requests').toEqual(before);
  });
});

// A sanity check of the table itself, so a wrong generator does not pass silently.
describe('the generated table', () => {
  it('when it is built, then each operation is tried with each credential and the non-team operations are the four', () => {
    expect(cases).toHaveLength(38 * 4);
    expect(operations.filter((op) => !op.teamScoped).map((op) => op.template)).toEqual(['/api/health', '/api/user', '/api/current-team', '/api/teams']);
    expect(operations.filter((op) => op.acceptsIngestKey && !op.isPublic).map((op) => op.operationId).sort()).toEqual(['config_get', 'ingest']);
  });
});
