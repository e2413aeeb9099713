// The package's server provider through @openfeature/server-sdk, against the real server on a
// real port: every reason and error code, exposures and track() counted in the experiment's
// results, and the provider's events (READY, CONFIGURATION_CHANGED, STALE, ERROR).
import { OpenFeature, ProviderEvents, type EvaluationDetails, type FlagValue } from '@openfeature/server-sdk';
import { evaluateConfig } from 'experimentation-api';
import { ExperimentationServerProvider, type ProviderOptions } from 'experimentation-api/openfeature';
import { describe, expect, it } from 'vitest';
import { rotateIngestKey } from '../../server/admin/service';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { arrangeReasons, unreadableConfigFetch } from '../support/openfeature';
import { startProxy } from '../support/proxy';
import { arrangeCheckout, EVENT, EXPERIMENT, FLAG, servedStatistics } from '../support/sdk';
import type { TestServer } from '../support/server';
import type { TestTeam } from '../support/team';

let domains = 0;

/** The provider bound to a domain of its own (OpenFeature's API is one per process), and that domain's client. */
async function providerFor(server: TestServer, team: TestTeam, options: Partial<ProviderOptions> = {}) {
  const provider = new ExperimentationServerProvider({ baseUrl: server.baseUrl, team: team.id, ingestKey: team.ingestKey, ...options });
  const domain = `server-provider-${++domains}`;
  await OpenFeature.setProviderAndWait(domain, provider);
  return { provider, client: OpenFeature.getClient(domain), domain };
}

/** What a test compares of evaluation details: no flag key, metadata only when there is some. */
function told<T extends FlagValue>(details: EvaluationDetails<T>) {
  const { value, reason, variant, errorCode, flagMetadata } = details;
  return { value, reason, variant, errorCode, ...(Object.keys(flagMetadata).length > 0 ? { flagMetadata } : {}) };
}

/** OFREP's single-flag evaluation of the same flag through the service: what it served, and why. */
async function ofrepEvaluation(server: TestServer, team: TestTeam, key: string, context: Record<string, string>) {
  const response = await fetch(`${server.baseUrl}/api/teams/${team.id}/ofrep/v1/evaluate/flags/${key}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ context }),
  });
  const { value, reason, variant } = (await response.json()) as { value: string; reason: string; variant: string };
  return { value, reason, variant };
}

/** Resolves when `predicate` holds, checked after each of the domain's `event`s. */
function waitFor(domain: string, event: ProviderEvents, predicate: () => boolean = () => true): Promise<void> {
  return new Promise((resolve) => {
    const client = OpenFeature.getClient(domain);
    const handler = () => {
      if (!predicate()) return;
      client.removeHandler(event, handler);
      resolve();
    };
    client.addHandler(event, handler);
  });
}

describe.each(engines)('the OpenFeature server provider on %s', (engine) => {
  const server = useServer(engine);

  it('when each kind of flag is evaluated, then the reason, variant and metadata say what served the value', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const { provider, client } = await providerFor(server(), team);
    try {
      const config = provider.client.config()!;
      const variantOf = (key: string) => evaluateConfig(config, { key }).experiments[EXPERIMENT];
      const treated = Array.from({ length: 40 }, (_, i) => `visitor-${i}`).find((key) => variantOf(key) === 'treatment')!;
      const control = Array.from({ length: 40 }, (_, i) => `visitor-${i}`).find((key) => variantOf(key) === 'control')!;

      // Act and assert
      expect(told(await client.getBooleanDetails('static_bool', false, { targetingKey: 'u1' }))).toEqual({ value: true, reason: 'STATIC', variant: 'default', errorCode: undefined });
      expect(told(await client.getStringDetails('plan_label', 'none', { targetingKey: 'u1', plan: 'pro' }))).toEqual({ value: 'gold', reason: 'TARGETING_MATCH', variant: 'rule_0', errorCode: undefined });
      expect(told(await client.getStringDetails('plan_label', 'none', { targetingKey: 'u1', plan: 'free' }))).toEqual({ value: 'plain', reason: 'DEFAULT', variant: 'default', errorCode: undefined });
      expect(told(await client.getNumberDetails('rollout_limit', 0, { targetingKey: 'u1' }))).toEqual({ value: 2.5, reason: 'SPLIT', variant: 'rule_0', errorCode: undefined });
      expect(told(await client.getObjectDetails('layout', { columns: 1 }, { targetingKey: 'u1' }))).toEqual({ value: { columns: 1 }, reason: 'DISABLED', variant: undefined, errorCode: undefined });
      expect(told(await client.getStringDetails('old_label', '', {}))).toEqual({ value: 'hello', reason: 'STATIC', variant: 'default', errorCode: undefined });
      expect(told(await client.getStringDetails(FLAG, 'none', { targetingKey: treated }))).toEqual({
        value: 'new',
        reason: 'SPLIT',
        variant: 'treatment',
        errorCode: undefined,
        flagMetadata: { experiment: EXPERIMENT },
      });
      // Control is not among the rule's variants: the flag's own value, for a reason the participant's variant decided.
      expect(told(await client.getStringDetails(FLAG, 'none', { targetingKey: control }))).toEqual({ value: 'old', reason: 'DEFAULT', variant: 'default', errorCode: undefined });
    } finally {
      await provider.onClose();
    }
  });

  it("when rules have schedules, then a flag none of whose rules is in force is STATIC, and one whose rule in force missed the participant is DEFAULT, as OFREP tells them", async () => {
    // Arrange
    const team = await server().newTeam();
    const path = { team: team.id };
    const flags = [
      { key: 'ended_sale', rules: [{ type: 'force' as const, value: 'sale', ends_at: '2020-01-01T00:00:00.000Z' }] },
      { key: 'coming_sale', rules: [{ type: 'force' as const, value: 'sale', starts_at: '2999-01-01T00:00:00.000Z' }] },
      { key: 'pro_sale', rules: [{ type: 'force' as const, conditions: { plan: 'pro' }, value: 'sale', starts_at: '2020-01-01T00:00:00.000Z', ends_at: '2999-01-01T00:00:00.000Z' }] },
    ];
    for (const flag of flags) {
      const created = await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { ...flag, type: 'string', enabled: true, value: 'none' } });
      expect(created.response.status).toBe(200);
    }
    const { client } = await providerFor(server(), team);
    // OFREP has no DEFAULT: rules that all missed are UNKNOWN there.
    const ofrep = async (key: string, context: Record<string, string>) => {
      const { value, reason, variant } = await ofrepEvaluation(server(), team, key, context);
      return { value, reason: reason === 'UNKNOWN' ? 'DEFAULT' : reason, variant };
    };

    // Act
    const cases = [
      ['ended_sale', { targetingKey: 'u1' }],
      ['coming_sale', { targetingKey: 'u1' }],
      ['pro_sale', { targetingKey: 'u1', plan: 'free' }],
      ['pro_sale', { targetingKey: 'u1', plan: 'pro' }],
    ] as const;
    const local = await Promise.all(cases.map(async ([key, context]) => told(await client.getStringDetails(key, 'x', context))));
    const remote = await Promise.all(cases.map(([key, context]) => ofrep(key, context)));

    // Assert
    expect(local).toEqual([
      { value: 'none', reason: 'STATIC', variant: 'default', errorCode: undefined },
      { value: 'none', reason: 'STATIC', variant: 'default', errorCode: undefined },
      { value: 'none', reason: 'DEFAULT', variant: 'default', errorCode: undefined },
      { value: 'sale', reason: 'TARGETING_MATCH', variant: 'rule_0', errorCode: undefined },
    ]);
    expect(remote).toEqual(local.map(({ value, reason, variant }) => ({ value, reason, variant })));
  });

  it('when a context carries numbers, dates, arrays and its targetingKey, then conditions read them as the service does, the targetingKey is no attribute, and the exposure stores the attributes without it', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
    const path = { team: team.id };
    const created = await team.api.POST('/api/teams/{team}/features', {
      params: { path },
      body: {
        key: 'context_reader',
        type: 'string',
        enabled: true,
        value: 'none',
        rules: [
          { type: 'force', conditions: { targetingKey: { $exists: true } }, value: 'key_is_an_attribute' },
          { type: 'force', conditions: { seats: { $gt: 5 }, signup: { $lt: '2025-01-01' }, plan: { $exists: false }, tags: { $all: ['beta'] } }, value: 'read' },
        ],
      },
    });
    expect(created.response.status).toBe(200);
    const { provider, client } = await providerFor(server(), team);
    const config = provider.client.config()!;
    const attributes = { seats: 6, signup: new Date('2024-03-01T00:00:00.000Z'), tags: ['beta', 'eu'] };
    const stored = { seats: 6, signup: '2024-03-01T00:00:00.000Z', tags: ['beta', 'eu'] };
    const visitor = Array.from({ length: 40 }, (_, i) => `visitor-${i}`).find((key) => evaluateConfig(config, { key, attributes: stored }).experiments[EXPERIMENT])!;
    try {
      // Act
      const read = told(await client.getStringDetails('context_reader', 'x', { targetingKey: visitor, ...attributes }));
      const missed = told(await client.getStringDetails('context_reader', 'x', { targetingKey: visitor, ...attributes, seats: 5 }));
      await client.getStringValue(FLAG, 'x', { targetingKey: visitor, ...attributes });
      await provider.client.flush();
      const participant = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: visitor } } });

      // Assert
      expect(read).toEqual({ value: 'read', reason: 'TARGETING_MATCH', variant: 'rule_1', errorCode: undefined });
      expect(missed).toEqual({ value: 'none', reason: 'DEFAULT', variant: 'default', errorCode: undefined });
      expect(participant.response.status).toBe(200);
      expect(participant.data!.data.attributes).toEqual(stored);
      expect(provider.client.stats()).toMatchObject({ rejected: 0, dropped: 0 });
    } finally {
      await provider.onClose();
    }
  });

  it("when a flag has a safe rollout, then each participant's arm is SPLIT with variant rollout_new or rollout_current, as OFREP answers it, and without a targetingKey it is TARGETING_KEY_MISSING", async () => {
    // Arrange: half of the participants in each arm
    const team = await server().newTeam();
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'banner', type: 'string', enabled: true, value: 'old' } });
    const step = { hold_seconds: 60, minimum_exposures: 10 };
    const created = await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: 'banner' } }, body: { value: 'new', steps: [{ percentage: 50, ...step }, { percentage: 100, ...step }] } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const { provider, client } = await providerFor(server(), team);
    try {
      // Act
      const visitors = Array.from({ length: 30 }, (_, i) => `visitor-${i}`);
      const local = await Promise.all(visitors.map(async (targetingKey) => told(await client.getStringDetails('banner', 'none', { targetingKey }))));
      const remote = await Promise.all(visitors.map(async (targetingKey) => ({ ...(await ofrepEvaluation(server(), team, 'banner', { targetingKey })), errorCode: undefined })));

      // Assert
      expect(new Set(local.map((t) => `${t.value} ${t.reason} ${t.variant}`))).toEqual(new Set(['new SPLIT rollout_new', 'old SPLIT rollout_current']));
      expect(local).toEqual(remote);
      // Nobody to expose: nothing is queued for a context without a targetingKey.
      const queued = provider.client.stats().queued;
      expect((await client.getStringDetails('banner', 'none', {})).errorCode).toBe('TARGETING_KEY_MISSING');
      expect(provider.client.stats().queued).toBe(queued);
    } finally {
      await provider.onClose();
    }
  });

  it('when an evaluation cannot be answered, then the default value comes back with the error code that says why', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const { provider, client } = await providerFor(server(), team);
    // A service whose boolean flag serves text this SDK cannot read as a boolean.
    const unreadable = await providerFor(server(), team, { fetch: unreadableConfigFetch, stream: false });
    try {
      // Act and assert
      expect(told(await client.getStringDetails('missing', 'fallback', { targetingKey: 'u1' }))).toMatchObject({ value: 'fallback', reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
      expect(told(await client.getNumberDetails('static_bool', 13, { targetingKey: 'u1' }))).toMatchObject({ value: 13, reason: 'ERROR', errorCode: 'TYPE_MISMATCH' });
      expect(told(await client.getStringDetails('old_label', 'x', { targetingKey: 'u1', nested: { plan: 'pro' } }))).toMatchObject({ value: 'x', reason: 'ERROR', errorCode: 'INVALID_CONTEXT' });
      expect(told(await client.getStringDetails('old_label', 'x', { targetingKey: 'has space' }))).toMatchObject({ value: 'x', reason: 'ERROR', errorCode: 'INVALID_CONTEXT' });
      expect(told(await client.getNumberDetails('rollout_limit', 0, { plan: 'pro' }))).toMatchObject({ value: 0, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' });
      expect(unreadable.provider.client.config()!.features.find((flag) => flag.key === 'static_bool')!.value).toBe('yes');
      expect(told(await unreadable.client.getBooleanDetails('static_bool', false, { targetingKey: 'u1' }))).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'PARSE_ERROR' });
    } finally {
      await provider.onClose();
      await unreadable.provider.onClose();
    }
  });

  it('when the provider has no config yet, then PROVIDER_NOT_READY; when the service refuses its key, then PROVIDER_FATAL', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const early = new ExperimentationServerProvider({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
    const refused = new ExperimentationServerProvider({ baseUrl: server().baseUrl, team: team.id, ingestKey: 'esk_not_the_key' });
    const fatalDomain = `server-provider-${++domains}`;
    try {
      // Act: asked before any config (the provider itself, then through the SDK before READY).
      const direct = await early.resolveBooleanEvaluation('static_bool', false, { targetingKey: 'u1' });
      const earlyDomain = `server-provider-${++domains}`;
      const waiting = OpenFeature.setProviderAndWait(earlyDomain, early);
      const throughSdk = await OpenFeature.getClient(earlyDomain).getBooleanDetails('static_bool', false, { targetingKey: 'u1' });
      await waiting;
      const afterReady = await OpenFeature.getClient(earlyDomain).getBooleanDetails('static_bool', false, { targetingKey: 'u1' });
      const refusal = await OpenFeature.setProviderAndWait(fatalDomain, refused).then(
        () => 'ready',
        (error: { code?: string }) => error.code,
      );
      const fatal = await OpenFeature.getClient(fatalDomain).getBooleanDetails('static_bool', false, { targetingKey: 'u1' });

      // Assert
      expect(direct).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'PROVIDER_NOT_READY' });
      expect(told(throughSdk)).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'PROVIDER_NOT_READY' });
      expect(told(afterReady)).toMatchObject({ value: true, reason: 'STATIC' });
      expect(refusal).toBe('PROVIDER_FATAL');
      expect(told(fatal)).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'PROVIDER_FATAL' });
    } finally {
      await early.onClose();
      await refused.onClose();
    }
  });

  it("when participants evaluate the experiment's flag and track through OpenFeature, then the experiment's results count their exposures and events", async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const { provider, client } = await providerFor(server(), team);
    const config = provider.client.config()!;
    const expected: Record<string, { participants: number; conversions: number; unique: number }> = {
      control: { participants: 0, conversions: 0, unique: 0 },
      treatment: { participants: 0, conversions: 0, unique: 0 },
    };
    try {
      // Act: 30 visitors read the flag (twice: one exposure each); every third buys twice.
      for (let i = 0; i < 30; i++) {
        const context = { targetingKey: `visitor-${i}`, plan: i % 2 ? 'pro' : 'free' };
        await client.getStringValue(FLAG, 'none', context);
        await client.getStringValue(FLAG, 'none', context);
        if (i % 3 === 0) {
          client.track(EVENT, context);
          client.track(EVENT, context);
        }
        const variant = evaluateConfig(config, { key: context.targetingKey, attributes: { plan: context.plan } }).experiments[EXPERIMENT];
        if (variant) {
          expected[variant]!.participants++;
          if (i % 3 === 0) {
            expected[variant]!.conversions += 2;
            expected[variant]!.unique++;
          }
        }
      }
      // Visitors who never read the flag: their events count nowhere.
      client.track(EVENT, { targetingKey: 'stranger' });
      await provider.client.flush();

      // Assert
      // Some of the 30 entered at 80 % coverage (more than 15 failed about 1 seed in 4 000; 5 fails about 1 in 10¹³).
      expect(expected.control!.participants + expected.treatment!.participants).toBeGreaterThan(5);
      expect(await servedStatistics(team.api, team.id)).toEqual(expected);
      expect(provider.client.stats()).toMatchObject({ rejected: 0, dropped: 0 });
    } finally {
      await provider.onClose();
    }
  });

  it("when track() carries a value, then the value event's mean in the results is the values' sum over the participants", async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const { provider, client } = await providerFor(server(), team);
    const config = provider.client.config()!;
    const treated = Array.from({ length: 60 }, (_, i) => `buyer-${i}`).filter((key) => evaluateConfig(config, { key }).experiments[EXPERIMENT] === 'treatment').slice(0, 4);
    try {
      // Act
      for (const [index, key] of treated.entries()) {
        await client.getStringValue(FLAG, 'none', { targetingKey: key });
        client.track('revenue', { targetingKey: key }, { value: 10 * (index + 1), currency: 'EUR' });
      }
      await provider.client.flush();

      // Assert: 10 + 20 + 30 + 40 over 4 participants.
      const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
        params: { path: { team: team.id, experiment: EXPERIMENT, variant: 'treatment' } },
      });
      expect(data!.data.participants).toBe(4);
      expect(data!.data.events.find((event) => event.event === 'revenue')).toMatchObject({ conversions: 4, means: { mean: 25 } });
    } finally {
      await provider.onClose();
    }
  });

  it('when the config changes, the network fails and comes back, and the key is rotated, then CONFIGURATION_CHANGED, STALE, READY and ERROR follow', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const proxy = await startProxy(server().baseUrl);
    const heard: string[] = [];
    const { provider, client, domain } = await providerFor(
      { ...server(), baseUrl: proxy.baseUrl },
      team,
      // Reconnect and poll at once: the outage is over when the proxy opens.
      { retryBaseMs: 20, maxRetryDelayMs: 100, pollIntervalMs: 100 },
    );
    for (const event of [ProviderEvents.Ready, ProviderEvents.ConfigurationChanged, ProviderEvents.Stale, ProviderEvents.Error]) client.addHandler(event, () => heard.push(event));
    heard.length = 0; // addHandler runs a READY handler at once for a ready provider.
    try {
      // Act 1: a flag flips.
      const changed = waitFor(domain, ProviderEvents.ConfigurationChanged);
      await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'static_bool' } }, body: { value: 'false' } });
      await changed;
      expect(await client.getBooleanValue('static_bool', true, { targetingKey: 'u1' })).toBe(false);

      // Act 2: the network fails; decisions go on from the last config.
      const stale = waitFor(domain, ProviderEvents.Stale);
      proxy.cut({ refuse: true });
      await stale;
      expect(await client.getBooleanDetails('static_bool', true, { targetingKey: 'u1' })).toMatchObject({ value: false, reason: 'STATIC' });
      const ready = waitFor(domain, ProviderEvents.Ready);
      proxy.open();
      await ready;

      // Act 3: the key is rotated; the next connection is refused.
      const error = waitFor(domain, ProviderEvents.Error);
      await rotateIngestKey(server().storage.db, team.id);
      proxy.cut();
      await error;

      // Assert
      // A loaded machine may see the cut connection (STALE) before the reconnection's 401 (ERROR).
      const beforeRotation = [ProviderEvents.ConfigurationChanged, ProviderEvents.Stale, ProviderEvents.Ready];
      expect(heard.slice(0, 3)).toEqual(beforeRotation);
      expect(heard.slice(3)).toEqual([...heard.slice(3, -1).map(() => ProviderEvents.Stale), ProviderEvents.Error]);
      expect(await client.getBooleanDetails('static_bool', true, { targetingKey: 'u1' })).toMatchObject({ value: true, errorCode: 'PROVIDER_FATAL' });
    } finally {
      await provider.onClose();
      await proxy.close();
    }
  });
});
