// OFREP 0.3.0 under the team, driven through the community's own client: @openfeature/ofrep-provider
// in @openfeature/server-sdk, configured with `baseUrl: <server>/api/teams/<team>` and nothing else
// of ours. Raw requests only where no provider sends them (a body that is not JSON, the bulk call).
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OpenFeature, type Client, type EvaluationContext } from '@openfeature/server-sdk';
import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, expectedVariant } from '../support/fixtures';
import { ofrepErrors } from '../support/ofrep-schemas';
import type { TestTeam } from '../support/team';

type FeatureCreate = components['schemas']['FeatureCreate'];
/** An OFREP body as read raw: checked against OFREP's shapes before it is read further. */
type Flag = { key: string; value?: unknown; errorCode?: string; errorDetails?: string };
type Bulk = { flags: Flag[] };

let domains = 0;

describe.each(engines)('OFREP endpoints on %s', (engine) => {
  const server = useServer(engine);

  /** An OpenFeature client on the OFREP provider, as a user of the community's provider would set it up. */
  async function openFeatureClient(team: TestTeam, headers: Array<[string, string]> = [['Authorization', `Bearer ${team.ingestKey}`]], baseUrl = server().baseUrl): Promise<Client> {
    const domain = `ofrep-${engine}-${++domains}`;
    await OpenFeature.setProviderAndWait(domain, new OFREPProvider({ baseUrl: `${baseUrl}/api/teams/${team.id}`, headers }));
    return OpenFeature.getClient(domain);
  }

  function post(team: TestTeam, path: string, body: string, headers: Record<string, string> = {}) {
    return fetch(`${server().baseUrl}/api/teams/${team.id}/ofrep/v1/evaluate/${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${team.ingestKey}`, 'Content-Type': 'application/json', ...headers },
      body,
    });
  }

  async function createFlag(team: TestTeam, body: FeatureCreate): Promise<void> {
    const created = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
  }

  /** A flag of each type, each reason, and an experiment rule. */
  async function arranged(): Promise<TestTeam> {
    const team = await server().newTeam();
    await createExperiment(team, 'checkout_test');
    await createFlag(team, { key: 'new_checkout', type: 'boolean', enabled: true, value: 'true' });
    await createFlag(team, { key: 'greeting', type: 'string', enabled: true, value: 'hello', rules: [{ type: 'force', conditions: { country: 'DE' }, value: 'hallo' }] });
    await createFlag(team, { key: 'discount', type: 'number', enabled: true, value: '0.25', rules: [{ type: 'rollout', percentage: 100, value: '0.5' }] });
    await createFlag(team, { key: 'limits', type: 'json', enabled: true, value: '{"limit": 10, "tiers": ["a", "b"]}' });
    await createFlag(team, { key: 'dark_mode', type: 'boolean', enabled: false, value: 'true' });
    await createFlag(team, { key: 'ended_sale', type: 'string', enabled: true, value: 'none', rules: [{ type: 'force', value: 'half_price', ends_at: '2020-01-01T00:00:00.000Z' }] });
    await createFlag(team, { key: 'checkout_page', type: 'string', enabled: true, value: 'classic', rules: [{ type: 'experiment', experiment: 'checkout_test', variants: { control: 'classic', treatment: 'one_page' } }] });
    return team;
  }

  async function variantOf(team: TestTeam, participant: string): Promise<string> {
    const { data } = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
    const experiment = data!.data.experiments[0]!;
    return expectedVariant(experiment.seed, participant, experiment.variants)!;
  }

  it('when every type is evaluated through the provider, then each answers its typed value with the reason and variant of the contract', async () => {
    const team = await arranged();
    const client = await openFeatureClient(team);
    const context: EvaluationContext = { targetingKey: 'user-1', country: 'FR' };

    const bool = await client.getBooleanDetails('new_checkout', false, context);
    const german = await client.getStringDetails('greeting', 'x', { targetingKey: 'user-1', country: 'DE' });
    const missed = await client.getStringDetails('greeting', 'x', context);
    const number = await client.getNumberDetails('discount', 0, context);
    const json = await client.getObjectDetails('limits', {}, context);
    const ended = await client.getStringDetails('ended_sale', 'x', context);

    expect(bool).toMatchObject({ value: true, reason: 'STATIC', variant: 'default' });
    expect(german).toMatchObject({ value: 'hallo', reason: 'TARGETING_MATCH', variant: 'rule_0' });
    expect(missed).toMatchObject({ value: 'hello', reason: 'UNKNOWN', variant: 'default' });
    expect(number).toMatchObject({ value: 0.5, reason: 'SPLIT', variant: 'rule_0' });
    expect(json).toMatchObject({ value: { limit: 10, tiers: ['a', 'b'] }, reason: 'STATIC', variant: 'default' });
    expect(ended).toMatchObject({ value: 'none', reason: 'STATIC', variant: 'default' });
    for (const details of [bool, german, missed, number, json, ended]) expect(details.errorCode).toBeUndefined();
  });

  it('when the answers are read raw, then each validates against OFREP\'s own shapes, and a disabled flag is a code default (no value)', async () => {
    const team = await arranged();
    const keys = ['new_checkout', 'greeting', 'discount', 'limits', 'dark_mode', 'ended_sale', 'checkout_page'];

    const bodies = await Promise.all(keys.map(async (key) => (await post(team, `flags/${key}`, JSON.stringify({ context: { targetingKey: 'user-2' } }))).json()));

    for (const body of bodies) expect(ofrepErrors('evaluationSuccess', body), JSON.stringify(body)).toEqual([]);
    expect(bodies[4]).toEqual({ key: 'dark_mode', reason: 'DISABLED' });
    const variant = await variantOf(team, 'user-2');
    expect(bodies[6]).toEqual({ key: 'checkout_page', value: variant === 'control' ? 'classic' : 'one_page', reason: 'SPLIT', variant, metadata: { experiment: 'checkout_test' } });
  });

  it('when a disabled flag is evaluated through the provider, then the application gets its own default', async () => {
    const team = await arranged();
    const client = await openFeatureClient(team);

    const details = await client.getBooleanDetails('dark_mode', false, { targetingKey: 'user-3' });

    // The provider (0.1.x) answers a code default with the application's default, reported as a type mismatch.
    expect(details.value).toBe(false);
  });

  it('when an experiment rule decides, then the variant and the experiment are told, and the exposure is counted in the results', async () => {
    const team = await arranged();
    const client = await openFeatureClient(team);
    const participants = Array.from({ length: 6 }, (_, i) => `exposed-${i}`);

    const answers = [];
    for (const participant of participants) answers.push(await client.getStringDetails('checkout_page', 'x', { targetingKey: participant, plan: 'pro' }));

    for (const [i, details] of answers.entries()) {
      const variant = await variantOf(team, participants[i]!);
      expect(details).toMatchObject({ value: variant === 'control' ? 'classic' : 'one_page', reason: 'SPLIT', variant, flagMetadata: { experiment: 'checkout_test' } });
    }
    const results = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'checkout_test' } } });
    expect(results.data?.data.participants).toBe(6);
    const stored = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'exposed-0' } } });
    expect(stored.data?.data.attributes).toEqual({ plan: 'pro' });
  });

  it('when the bulk evaluation is asked, then nobody is enrolled, every flag answers, and an unchanged answer is a 304 with no body', async () => {
    const team = await arranged();
    const context = JSON.stringify({ context: { targetingKey: 'bulk-1', country: 'DE' } });

    const first = await post(team, 'flags', context);
    const body = (await first.json()) as Bulk;
    const etag = first.headers.get('etag')!;
    const again = await post(team, 'flags', context, { 'If-None-Match': etag });
    const otherContext = await post(team, 'flags', JSON.stringify({ context: { targetingKey: 'bulk-1', country: 'FR' } }), { 'If-None-Match': etag });
    await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'new_checkout' } }, body: { value: 'false' } });
    const changed = await post(team, 'flags', context, { 'If-None-Match': etag });

    expect(first.status).toBe(200);
    expect(ofrepErrors('bulkEvaluationSuccess', body), JSON.stringify(body)).toEqual([]);
    expect(body.flags.map((flag) => flag.key).sort()).toEqual(['checkout_page', 'dark_mode', 'discount', 'ended_sale', 'greeting', 'limits', 'new_checkout']);
    expect(body.flags.find((flag) => flag.key === 'greeting')).toEqual({ key: 'greeting', value: 'hallo', reason: 'TARGETING_MATCH', variant: 'rule_0' });
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(otherContext.status).toBe(200);
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(((await changed.json()) as Bulk).flags.find((flag) => flag.key === 'new_checkout')?.value).toBe(false);
    const results = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'checkout_test' } } });
    expect(results.data?.data.participants).toBe(0);
    const participant = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'bulk-1' } } });
    expect(participant.response.status).toBe(404);
  });

  it('when the context has no targetingKey, then a decision that needs one is TARGETING_KEY_MISSING and the others answer', async () => {
    const team = await arranged();
    const client = await openFeatureClient(team);

    const rollout = await client.getNumberDetails('discount', 1, { country: 'FR' });
    const experiment = await client.getStringDetails('checkout_page', 'x', {});
    const forced = await client.getStringDetails('greeting', 'x', { country: 'DE' });
    const bulk = (await (await post(team, 'flags', JSON.stringify({ context: { country: 'DE' } }))).json()) as Bulk;

    expect(rollout).toMatchObject({ value: 1, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' });
    expect(experiment).toMatchObject({ value: 'x', reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' });
    expect(forced).toMatchObject({ value: 'hallo', reason: 'TARGETING_MATCH' });
    expect(ofrepErrors('bulkEvaluationSuccess', bulk)).toEqual([]);
    const byKey = new Map(bulk.flags.map((flag) => [flag.key, flag]));
    expect(byKey.get('discount')).toMatchObject({ key: 'discount', errorCode: 'TARGETING_KEY_MISSING' });
    expect(byKey.get('checkout_page')).toMatchObject({ errorCode: 'TARGETING_KEY_MISSING' });
    expect(byKey.get('greeting')).toMatchObject({ value: 'hallo', reason: 'TARGETING_MATCH' });
    expect(ofrepErrors('evaluationFailure', byKey.get('discount'))).toEqual([]);
  });

  it('when the flag is unknown or the context invalid, then the provider reports FLAG_NOT_FOUND and INVALID_CONTEXT, and a body that is not JSON is PARSE_ERROR', async () => {
    const team = await arranged();
    const client = await openFeatureClient(team);

    const unknown = await client.getBooleanDetails('no-such-flag', true, { targetingKey: 'u' });
    const invalid = await client.getBooleanDetails('new_checkout', false, { targetingKey: 'u', address: { city: 'Berlin' } });
    const notFound = await post(team, 'flags/no-such-flag', '{}');
    const badContext = await post(team, 'flags/new_checkout', JSON.stringify({ context: { targetingKey: 'u', address: { city: 'Berlin' } } }));
    const unknownProperty = await post(team, 'flags/new_checkout', JSON.stringify({ context: { targetingKey: 'u' }, id: 5 }));
    const badKeys = await Promise.all([{ targetingKey: 'user 42' }, { targetingKey: 42 }].map((context) => post(team, 'flags/new_checkout', JSON.stringify({ context }))));
    const parse = await post(team, 'flags/new_checkout', '{"context": ');
    const bulkParse = await post(team, 'flags', 'not json');

    expect(unknown).toMatchObject({ value: true, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    expect(invalid).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'INVALID_CONTEXT' });
    expect(notFound.status).toBe(404);
    const notFoundBody = await notFound.json();
    expect(ofrepErrors('flagNotFound', notFoundBody)).toEqual([]);
    expect(notFoundBody).toMatchObject({ key: 'no-such-flag', errorCode: 'FLAG_NOT_FOUND' });
    expect(badContext.status).toBe(400);
    const badBody = (await badContext.json()) as Flag;
    expect(ofrepErrors('evaluationFailure', badBody)).toEqual([]);
    expect(badBody).toMatchObject({ key: 'new_checkout', errorCode: 'INVALID_CONTEXT' });
    expect(badBody.errorDetails).toContain('/body/context/address');
    expect(unknownProperty.status).toBe(400);
    expect(await unknownProperty.json()).toMatchObject({ key: 'new_checkout', errorCode: 'INVALID_CONTEXT', errorDetails: expect.stringContaining('/body/id') });
    for (const badKey of badKeys) {
      expect(badKey.status).toBe(400);
      expect(await badKey.json()).toMatchObject({ key: 'new_checkout', errorCode: 'INVALID_CONTEXT', errorDetails: expect.stringContaining('/body/context/targetingKey') });
    }
    expect(parse.status).toBe(400);
    expect(await parse.json()).toMatchObject({ key: 'new_checkout', errorCode: 'PARSE_ERROR' });
    expect(bulkParse.status).toBe(400);
    const bulkBody = (await bulkParse.json()) as Flag;
    expect(ofrepErrors('bulkEvaluationFailure', bulkBody)).toEqual([]);
    expect(bulkBody.errorCode).toBe('PARSE_ERROR');
  });

  it('when the credential is an X-API-Key, another team\'s or none, then the provider works, is refused 403, is refused 401', async () => {
    const team = await arranged();
    const other = await server().newTeam();
    const byHeader = await openFeatureClient(team, [['X-API-Key', team.ingestKey]]);
    const otherTeams = await openFeatureClient(team, [['Authorization', `Bearer ${other.ingestKey}`]]);
    const nobody = await openFeatureClient(team, []);

    const allowed = await byHeader.getBooleanDetails('new_checkout', false, { targetingKey: 'u' });
    const forbidden = await otherTeams.getBooleanDetails('new_checkout', false, { targetingKey: 'u' });
    const unauthorized = await nobody.getBooleanDetails('new_checkout', false, { targetingKey: 'u' });
    const statuses = [
      (await post(team, 'flags/new_checkout', '{}', { Authorization: `Bearer ${other.ingestKey}` })).status,
      (await post(team, 'flags/new_checkout', '{}', { Authorization: '' })).status,
      (await post(team, 'flags', '{}', { Authorization: '', 'X-API-Key': 'nonsense' })).status,
    ];

    expect(allowed).toMatchObject({ value: true, reason: 'STATIC' });
    expect(forbidden).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'GENERAL' });
    expect(unauthorized).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'GENERAL' });
    expect(statuses).toEqual([403, 401, 401]);
  });

  describe('over the rate limit', () => {
    const limited = useServer(() => ({ beside: server(), app: { rateLimit: { enabled: true, windowSeconds: 60, perCredential: 1, perAddress: 1000, keys: 1000 } } }));

    it('when the budget is used up, then the answer is 429 with Retry-After, and the provider pauses until then', async () => {
      const team = await arranged();
      const client = await openFeatureClient(team, undefined, limited().baseUrl);

      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await client.getBooleanDetails('new_checkout', false, { targetingKey: 'u' }));
      const raw = await fetch(`${limited().baseUrl}/api/teams/${team.id}/ofrep/v1/evaluate/flags`, {
        method: 'POST',
        headers: { 'X-API-Key': team.ingestKey, 'Content-Type': 'application/json' },
        body: '{}',
      });
      const paused = await client.getBooleanDetails('new_checkout', false, { targetingKey: 'u' });

      expect(answers.slice(0, 2).map((details) => details.value)).toEqual([true, true]);
      expect(answers[2]).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'GENERAL' });
      expect(raw.status).toBe(429);
      expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(paused).toMatchObject({ value: false, reason: 'ERROR' });
      expect(paused.errorMessage).toMatch(/paused due to TooManyRequests/);
    });
  });
});
