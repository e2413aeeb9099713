import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

/**
 * Mass assignment (OWASP API3/API6): what the service decides — ids, status, counters, the
 * assignment seed, timestamps, the automatic traffic flag, the owning team — is in no request
 * schema, and request schemas allow nothing else, so a client that sends any of it on any
 * create or update operation gets 400 naming `/body/<field>`, and nothing is written.
 */

type Json = Record<string, unknown>;
interface Schema {
  $ref?: string;
  properties?: Record<string, unknown>;
}
const spec = JSON.parse(readFileSync(fileURLToPath(new URL('../../generated/openapi.json', import.meta.url)), 'utf8')) as {
  paths: Record<string, Record<string, { operationId: string; requestBody?: Json; responses: Record<string, Json>; 'x-ofrep'?: string }>>;
  components: Json;
};

function deref<T = Json>(value: unknown): T {
  const ref = (value as Json).$ref;
  if (typeof ref !== 'string') return value as T;
  return deref<T>(ref.replace(/^#\//, '').split('/').reduce<unknown>((node, part) => (node as Json)[part], spec));
}
const propertiesOf = (schema: unknown) => Object.keys(deref<Schema>(schema).properties ?? {});

/** The fields the issue names: never the client's to set. */
const SERVER_FIELDS = [
  'id',
  'status',
  'events_count',
  'experiments_count',
  'participants_count',
  'participants',
  'seed',
  'created_at',
  'updated_at',
  'started_at',
  'stopped_at',
  'traffic_auto',
  'team_id',
  'team',
];

/** A plausible value of each field's type, so that the field itself is the only thing wrong. */
const VALUES: Record<string, unknown> = {
  id: 1,
  status: 'running',
  events_count: 5,
  experiments_count: 5,
  participants_count: 5,
  participants: 5,
  seed: '00000000000000000000000000000000',
  hash_version: 1,
  // What an evaluation answers (beside experiments), sent back as if it were input.
  features: {},
  experiment_reasons: {},
  created_at: '2020-01-01T00:00:00.000Z',
  updated_at: '2020-01-01T00:00:00.000Z',
  started_at: '2020-01-01T00:00:00.000Z',
  stopped_at: '2020-01-01T00:00:00.000Z',
  enrolled_at: '2020-01-01T00:00:00.000Z',
  traffic_auto: false,
  team_id: 1,
  team: 1,
  variants: [],
  experiments: [],
  assignments: [],
  key: 'renamed',
  disabled_reason: 'the receiver answered 410',
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  // A safe rollout's own: its number, flag, state and ramp position, as a rollout read shows them.
  number: 7,
  feature: 'flag',
  state: 'released',
  step: 3,
  share: 100,
  history: [],
  rollback: { event: 'purchase' },
  // What a rollout's check reads, as a rollout read shows it.
  exposures: { new: 5000, current: 5000 },
  readings: [],
  hold: { since: '2020-01-01T00:00:00.000Z', sample_ratio_p_value: 0.5 },
};

/** Each create/update operation: where it goes in the fixture, and a body that is valid alone. */
const TARGETS: Record<string, { path: Record<string, string>; body: Json; created?: string }> = {
  events_create: { path: {}, body: { key: 'fresh_event' }, created: 'fresh_event' },
  events_update: { path: { event: 'purchase' }, body: { description: 'Changed' } },
  experiments_create: { path: {}, body: { key: 'fresh_experiment', event: 'purchase' }, created: 'fresh_experiment' },
  experiments_update: { path: { experiment: 'draft_exp' }, body: { description: 'Changed' } },
  variants_create: { path: { experiment: 'draft_exp' }, body: { key: 'blue' }, created: 'blue' },
  variants_update: { path: { experiment: 'draft_exp', variant: 'green' }, body: { description: 'Changed' } },
  features_create: { path: {}, body: { key: 'fresh_feature', enabled: true }, created: 'fresh_feature' },
  features_update: { path: { feature: 'flag' }, body: { enabled: false } },
  participants_create: { path: {}, body: { key: 'fresh-participant' }, created: 'fresh-participant' },
  participants_update: { path: { participant: 'user-42' }, body: { notes: 'Changed' } },
  ingest: { path: {}, body: { participant: 'fresh-ingest', event: 'purchase' }, created: 'fresh-ingest' },
  ingest_batch: { path: {}, body: { items: [{ participant: 'fresh-batch', event: 'purchase' }] }, created: 'fresh-batch' },
  evaluate: { path: {}, body: { participant: 'fresh-evaluated' } },
  // A name that resolves to a public address, or (offline) to none yet: accepted either way.
  webhooks_create: { path: {}, body: { key: 'fresh_webhook', url: 'https://hooks.example.com/experiments', event_types: ['flag.updated'] }, created: 'fresh_webhook' },
  webhooks_update: { path: { webhook: 'alerts' }, body: { description: 'Changed' } },
  rollouts_create: { path: { feature: 'flag' }, body: { value: 'on' } },
};

interface Operation {
  operationId: string;
  method: string;
  template: string;
  /** Fields the operation's responses show but its request schema does not take. */
  forbidden: string[];
}

const operations: Operation[] = Object.entries(spec.paths).flatMap(([template, item]) =>
  Object.entries(item)
    // OFREP's operations (x-ofrep) answer OFREP's error bodies, not problems: test/server/ofrep.test.ts refuses their unknown properties.
    .filter(([method, op]) => ['post', 'put', 'patch'].includes(method) && op.requestBody && !op['x-ofrep'])
    .map(([method, op]) => {
      const content = deref<{ content: Record<string, { schema: unknown }> }>(op.requestBody).content;
      const accepted = new Set(propertiesOf(content['application/json'].schema));
      const success = deref<{ content?: Record<string, { schema: unknown }> }>(op.responses['200']).content?.['application/json']?.schema;
      const shown = success === undefined ? [] : propertiesOf(deref<Schema>(success).properties?.data ?? {});
      const forbidden = [...new Set([...SERVER_FIELDS, ...shown])].filter((field) => !accepted.has(field));
      return { operationId: op.operationId, method: method.toUpperCase(), template, forbidden };
    }),
);

interface Case {
  op: Operation;
  field: string;
  /** `participant` for the ingest body's participant object, `item` for a batch's first item, else the body itself. */
  within?: 'participant' | 'item';
  label: string;
}
const cases: Case[] = operations.flatMap((op) => [
  ...op.forbidden.map((field) => ({ op, field, label: `${op.operationId} ${field}` })),
  // Ingest's participant may be an object with key, notes and attributes — and nothing else.
  ...(op.operationId === 'ingest'
    ? SERVER_FIELDS.map((field) => ({ op, field, within: 'participant' as const, label: `${op.operationId} participant.${field}` }))
    : []),
  // A batch's items are single ingests' bodies: closed the same way.
  ...(op.operationId === 'ingest_batch' ? SERVER_FIELDS.map((field) => ({ op, field, within: 'item' as const, label: `${op.operationId} items[0].${field}` })) : []),
]);

describe('the mass-assignment table', () => {
  it('when it is built from the contract, then it covers the create and update operations of events, experiments, variants, features, participants, webhooks, rollouts and ingest (single and batch)', () => {
    expect(operations.map((op) => op.operationId).sort()).toEqual(Object.keys(TARGETS).sort());
  });

  it('when it is built, then every operation is tried with every server field the issue names', () => {
    for (const op of operations) expect(op.forbidden, op.operationId).toEqual(expect.arrayContaining(SERVER_FIELDS));
    for (const { field } of cases) expect(VALUES, field).toHaveProperty(field);
  });
});

describe.each(engines)('mass assignment on %s', (engine) => {
  const server = useServer(engine);
  let team: TestTeam;
  let other: TestTeam;
  let before: unknown;
  let otherBefore: unknown;

  async function snapshot(of: TestTeam): Promise<unknown> {
    const get = async (path: string) => {
      const response = await fetch(server().baseUrl + path, { headers: { authorization: `Bearer ${of.token}` } });
      expect(response.status, path).toBe(200);
      return ((await response.json()) as { data: unknown }).data;
    };
    const [described, config, participant, variants, webhooks] = await Promise.all([
      get(`/api/teams/${of.id}?include=events,experiments.variants,participants,features`),
      get(`/api/teams/${of.id}/config`),
      get(`/api/teams/${of.id}/participants/user-42`),
      get(`/api/teams/${of.id}/experiments/running_exp/variants/green/statistics`),
      get(`/api/teams/${of.id}/webhooks`),
    ]);
    return { described, config, participant, variants, webhooks };
  }

  async function populate(of: TestTeam): Promise<void> {
    const path = { team: of.id };
    const results: Array<{ response: Response }> = [await of.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } })];
    for (const experiment of ['running_exp', 'draft_exp']) {
      results.push(await of.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: experiment, event: 'purchase' } }));
      for (const body of [
        { key: 'control', control: true, traffic: 50 },
        { key: 'green', traffic: 50 },
      ]) {
        results.push(await of.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment } }, body }));
      }
    }
    results.push(await of.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'running_exp' } } }));
    results.push(await of.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'flag', enabled: true } }));
    results.push(await of.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'user-42', event: 'purchase' } }));
    results.push(await of.api.POST('/api/teams/{team}/webhooks', { params: { path }, body: { key: 'alerts', url: 'https://hooks.example.com/alerts', event_types: ['flag.updated'] } }));
    for (const { response } of results) expect(response.status, response.url).toBe(200);
  }

  function urlOf(op: Operation): string {
    const path = TARGETS[op.operationId].path;
    return server().baseUrl + op.template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(name === 'team' ? String(team.id) : path[name]));
  }

  function send(op: Operation, body: Json) {
    const credential = op.operationId.startsWith('ingest') ? team.ingestKey : team.token;
    return fetch(urlOf(op), {
      method: op.method,
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  beforeAll(async () => {
    team = await server().newTeam('Assigned');
    other = await server().newTeam('Bystander');
    await populate(team);
    await populate(other);
    before = await snapshot(team);
    otherBefore = await snapshot(other);
  });

  it.each(cases)('when $label is sent, then 400 names it and nothing changed', async ({ op, field, within }) => {
    const base = TARGETS[op.operationId].body;
    // team_id / team point at the other team: a body must not move anything there either.
    const value = field === 'team_id' || field === 'team' ? other.id : VALUES[field];
    const withField = (json: Json) => ({ ...json, [field]: value });
    const body =
      within === 'participant' ? { ...base, participant: { key: base.participant, [field]: value } } : within === 'item' ? { items: [withField((base.items as Json[])[0]!)] } : withField(base);
    const response = await send(op, body);
    const problem = (await response.json()) as { status: number; errors?: Array<{ path: string; message: string }> };
    expect(response.status, JSON.stringify(problem)).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const path = within === 'participant' ? `/body/participant/${field}` : within === 'item' ? `/body/items/0/${field}` : `/body/${field}`;
    expect(problem.errors?.map((error) => error.path), JSON.stringify(problem.errors)).toContain(path);

    const [after, otherAfter] = await Promise.all([snapshot(team), snapshot(other)]);
    expect(after, 'the team').toEqual(before);
    expect(otherAfter, 'the other team').toEqual(otherBefore);
  });

  it('when the same bodies are sent without the server fields, then each succeeds — the fields alone were refused', async () => {
    for (const op of operations) {
      const { body, created } = TARGETS[op.operationId];
      const response = await send(op, body);
      const text = await response.text();
      expect(response.status, `${op.operationId}: ${text}`).toBe(200);
      if (created !== undefined) expect(text, op.operationId).toContain(created);
    }
    expect(await snapshot(other), 'the other team').toEqual(otherBefore);
  });
});
