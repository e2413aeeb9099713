import { beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createToken, revokeToken, rotateIngestKey } from '../../server/admin/service';
import { operations, pathExamples, pathOf, type ContractOperation } from '../support/contract-operations';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { bodyOrFirstMessage } from '../support/event-stream';
import type { TestTeam } from '../support/team';

/**
 * Every operation of the bundled contract × every kind of credential, valid or not, the
 * target team's own or another team's. Generated from generated/openapi.json, so an added
 * operation is covered too. After every request, neither the target team nor the caller's
 * team has changed — except where the team's own API token was meant to change its own team.
 */

type Operation = ContractOperation;

type Credential =
  | 'no credential'
  | "the team's API token"
  | "another team's API token"
  | "the team's revoked API token"
  | 'a malformed bearer'
  | "the team's ingest key"
  | "the team's rotated-out ingest key"
  | "another team's ingest key";
const credentials: Credential[] = [
  'no credential',
  "the team's API token",
  "another team's API token",
  "the team's revoked API token",
  'a malformed bearer',
  "the team's ingest key",
  "the team's rotated-out ingest key",
  "another team's ingest key",
];

/** The status the contract's rules (info.description, Authentication) give for the pair. */
function expectedStatus(op: Operation, credential: Credential): number {
  // The config and OFREP's operations, which SDKs and providers call with ingest keys, tell another team's credential 403.
  const isConfig = ['config_get', 'config_stream', 'ofrep_flag_evaluate', 'ofrep_flags_evaluate', 'ofrep_event_stream'].includes(op.operationId);
  switch (credential) {
    case "the team's revoked API token":
    case "the team's rotated-out ingest key":
    case 'a malformed bearer':
      return 401; // "a missing, unknown or revoked credential is 401" — the health check included
    case "the team's API token":
      return 200; // the documented success, from a team of its own (see ownTeamSetup)
    case 'no credential':
      return op.isPublic ? 200 : 401;
    case "another team's API token":
      if (op.isPublic || !op.teamScoped) return 200; // health; the caller's own user, current team, teams
      return isConfig ? 403 : 404;
    case "the team's ingest key":
      return op.isPublic || op.acceptsIngestKey ? 200 : 403;
    case "another team's ingest key":
      if (op.isPublic) return 200;
      if (!op.acceptsIngestKey) return 403;
      return isConfig ? 403 : 404;
  }
}

const examples = pathExamples;

const cases = operations.flatMap((op) =>
  credentials.map((credential) => ({ op, credential, label: `${op.method} ${op.template}`, status: expectedStatus(op, credential) })),
);

// The resources the operations' path examples name, created in every team so every path exists
// (in the other team too: a request that reached the wrong team would find something to change).
const EXAMPLE_VARIANTS = [
  { key: 'control', control: true, traffic: 50 },
  { key: 'green', traffic: 50 },
];

interface Fixture {
  /** `draft`: the example experiment is not started (variants change, it can start or be deleted). */
  status: 'running' | 'draft';
  /** The example experiment's goal; `signup` leaves the example event free to delete. */
  goal: string;
  /** The state of the example flag's rollout 1; `none`: the flag has none (another can be created). */
  rollout: 'running' | 'paused' | 'none';
}
const RUNNING: Fixture = { status: 'running', goal: 'purchase', rollout: 'running' };

/**
 * With the team's own API token every operation succeeds: each such case runs on a fresh team
 * of its own, in the state the operation needs, with a body that does not collide with the
 * fixture (the request examples create keys the fixture already has).
 */
const ownTeamSetup: Record<string, { fixture?: Partial<Fixture>; body?: unknown }> = {
  events_create: { body: { key: 'refund' } },
  events_delete: { fixture: { goal: 'signup' } },
  experiments_create: { body: { key: 'pricing_page', event: 'purchase' } },
  experiments_delete: { fixture: { status: 'draft' } },
  experiments_start: { fixture: { status: 'draft' } },
  variants_create: { fixture: { status: 'draft' }, body: { key: 'blue' } },
  variants_update: { fixture: { status: 'draft' } },
  variants_delete: { fixture: { status: 'draft' } },
  features_create: { body: { key: 'dark_mode', enabled: false } },
  participants_create: { body: { key: 'user-43' } },
  rollouts_create: { fixture: { rollout: 'none' }, body: { value: 'true' } },
  rollouts_resume: { fixture: { rollout: 'paused' } },
  webhooks_create: { body: { key: 'ci', url: 'https://203.0.113.8/ci', event_types: ['flag.updated'] } },
  // The request example reports a value event, which the fixture does not define.
  ingest: { body: { participant: 'user-42', event: 'purchase' } },
};

describe('the operations the authorization table covers (the bundled contract)', () => {
  it('when it is read, then it has the 61 operations this table covers', () => {
    expect(operations).toHaveLength(61);
    expect(new Set(operations.map((op) => op.operationId)).size).toBe(61);
  });
});

describe.each(engines)('authorization on %s', (engine) => {
  const server = useServer(engine);
  let target: TestTeam;
  let other: TestTeam;
  /** Headers by credential; built once the teams exist. */
  let headers: Record<Credential, Record<string, string>>;
  const before = new Map<number, unknown>();

  /** Everything of a team a member can read, in one comparable value. */
  async function snapshot(team: TestTeam): Promise<unknown> {
    const get = async (path: string) => {
      const response = await fetch(server().baseUrl + path, { headers: { authorization: `Bearer ${team.token}` } });
      expect(response.status, path).toBe(200);
      return ((await response.json()) as { data: unknown }).data;
    };
    const described = (await get(`/api/teams/${team.id}?include=events,experiments.variants,participants,features`)) as {
      experiments: Array<{ key: string; variants: Array<{ key: string }> }>;
    };
    // The rest in parallel: it is read after every one of the 300-odd requests.
    const variants = described.experiments.flatMap((experiment) => experiment.variants.map((variant) => [experiment.key, variant.key]));
    const [statistics, config, participants, rollouts] = await Promise.all([
      Promise.all(variants.map(([experiment, variant]) => get(`/api/teams/${team.id}/experiments/${experiment}/variants/${variant}/statistics`))),
      get(`/api/teams/${team.id}/config`),
      Promise.all([examples.participant, 'someone-else'].map((participant) => get(`/api/teams/${team.id}/participants/${participant}/experiments`))),
      get(`/api/teams/${team.id}/features/${examples.feature}/rollouts`),
    ]);
    // The month's accepted ingests count the one re-report meant to succeed: a counter of requests, not a resource.
    const { ingest_used: _counted, ...resources } = described as typeof described & { ingest_used: number };
    return { team: resources, statistics, config, participants, rollouts };
  }

  /** The example resources, through the API as a client would create them. */
  async function populate(team: TestTeam, fixture: Fixture = RUNNING): Promise<void> {
    const path = { team: team.id };
    const experiment = { ...path, experiment: examples.experiment };
    const feature = { ...path, feature: examples.feature! };
    const created = [
      // The example endpoint (on a documentation address: no DNS, nothing delivered here); the events' creations are its deliveries 1 and 2.
      await team.api.POST('/api/teams/{team}/webhooks', { params: { path }, body: { key: examples.webhook!, url: 'https://203.0.113.7/hooks', event_types: ['event.created'] } }),
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: examples.event } }),
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'signup' } }),
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: examples.experiment, event: fixture.goal } }),
      ...(await Promise.all(
        EXAMPLE_VARIANTS.map((body) => team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body })),
      )),
      ...(fixture.status === 'running'
        ? [await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: experiment } })]
        : []),
      await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: examples.feature, enabled: true } }),
      ...(fixture.rollout === 'none' ? [] : [await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: feature }, body: { value: 'true' } })]),
      ...(fixture.rollout === 'paused' ? [await team.api.POST('/api/teams/{team}/features/{feature}/rollouts/{rollout}/pause', { params: { path: { ...feature, rollout: examples.rollout! } } })] : []),
      await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: examples.participant, event: examples.event } }),
      await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: 'someone-else' } }),
      // The participant's exposure to the rollout when the rollout's seed puts it in: OFREP's single
      // evaluation with the team's key re-reports it later, which then changes nothing.
      await team.ingest.POST('/api/teams/{team}/ofrep/v1/evaluate/flags/{feature}', { params: { path: feature }, body: { context: { targetingKey: examples.participant } } }),
    ];
    for (const { response } of created) expect(response.status, response.url).toBe(200);
  }

  function urlOf(op: Operation, team: TestTeam): string {
    return server().baseUrl + pathOf(op, team.id);
  }

  beforeAll(async () => {
    target = await server().newTeam('Target');
    other = await server().newTeam('Other');
    const db = server().storage.db;

    // A second token of the target's user, revoked: it would reach everything the first one does.
    const revoked = (await createToken(db, target.email)).token;
    expect((await revokeToken(db, revoked)).revoked).toBe(1);
    // The target's first ingest key, rotated out: the team's current key is a new one.
    const rotatedOut = target.ingestKey;
    const rotated = (await rotateIngestKey(db, target.id)).ingest_key;
    target = { ...target, ingestKey: rotated, ingest: createApiClient(server().baseUrl, rotated) };

    headers = {
      'no credential': {},
      "the team's API token": {}, // from a team of its own: see the test
      "another team's API token": { authorization: `Bearer ${other.token}` },
      "the team's revoked API token": { authorization: `Bearer ${revoked}` },
      // The team's valid token, written as clients sometimes do: a colon after the scheme.
      'a malformed bearer': { authorization: `Bearer: ${target.token}` },
      "the team's ingest key": { authorization: `Bearer ${target.ingestKey}` },
      "the team's rotated-out ingest key": { authorization: `Bearer ${rotatedOut}` },
      "another team's ingest key": { authorization: `Bearer ${other.ingestKey}` },
    };

    await populate(target);
    await populate(other);
    expect(EXAMPLE_VARIANTS.map((v) => v.key)).toContain(examples.variant);
    before.set(target.id, await snapshot(target));
    before.set(other.id, await snapshot(other));
  });

  it.each(cases)('when $label is called with $credential, then $status', async ({ op, credential, status }) => {
    let team = target;
    let authorization = headers[credential];
    // The request example where there is one — so a breach would change something. The requests
    // on the shared target that are meant to succeed and write (ingest and OFREP's single
    // evaluation with the team's key) re-report the already enrolled and exposed participant,
    // which changes nothing the snapshot sees.
    const reReport = { participant: examples.participant };
    const succeeding = op.operationId === 'ingest_batch' ? { items: [reReport] } : op.operationId.startsWith('ofrep_') ? { context: { targetingKey: examples.participant } } : reReport;
    let body = status === 200 && op.method !== 'GET' ? succeeding : op.bodyExample;
    if (credential === "the team's API token") {
      const setup = ownTeamSetup[op.operationId] ?? {};
      team = await server().newTeam(`Own ${op.operationId}`);
      await populate(team, { ...RUNNING, ...setup.fixture });
      authorization = { authorization: `Bearer ${team.token}` };
      body = setup.body ?? op.bodyExample;
    }
    const response = await fetch(urlOf(op, team), {
      method: op.method,
      headers: { ...authorization, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await bodyOrFirstMessage(response);
    expect(response.status, text).toBe(status);
    expect(op.documented.has(response.status), `${response.status} is documented on ${op.operationId}`).toBe(true);
    if (status >= 400) {
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(text)).toMatchObject({ status, title: expect.any(String), detail: expect.any(String), type: expect.any(String) });
    }
    if (status === 401) expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);

    // Whoever called — the target's own (revoked, rotated-out, malformed) credentials, the other
    // team's, none, or a third team's own token — neither the target nor the other team changed.
    const [targetAfter, otherAfter] = await Promise.all([snapshot(target), snapshot(other)]);
    expect(targetAfter, 'the target team').toEqual(before.get(target.id));
    expect(otherAfter, 'the other team').toEqual(before.get(other.id));
  });
});

// A sanity check of the table itself, so a wrong generator does not pass silently.
describe('the generated table', () => {
  it('when it is built, then each operation is tried with each credential and the non-team operations are the four', () => {
    expect(cases).toHaveLength(61 * credentials.length);
    expect(credentials).toHaveLength(8);
    expect(operations.filter((op) => !op.teamScoped).map((op) => op.template)).toEqual(['/api/health', '/api/user', '/api/current-team', '/api/teams']);
    expect(operations.filter((op) => op.acceptsIngestKey && !op.isPublic).map((op) => op.operationId).sort()).toEqual(['config_get', 'config_stream', 'evaluate', 'ingest', 'ingest_batch', 'ofrep_event_stream', 'ofrep_flag_evaluate', 'ofrep_flags_evaluate']);
  });

  it('when the own-team setups are read, then each names an operation of the contract', () => {
    const ids = new Set(operations.map((op) => op.operationId));
    for (const id of Object.keys(ownTeamSetup)) expect(ids, id).toContain(id);
  });

  it('when the statuses are read, then every credential is refused somewhere and the own token nowhere', () => {
    for (const credential of credentials) {
      const statuses = new Set(cases.filter((c) => c.credential === credential).map((c) => c.status));
      if (credential === "the team's API token") expect([...statuses]).toEqual([200]);
      else expect([...statuses].some((status) => status >= 400), credential).toBe(true);
    }
  });
});
