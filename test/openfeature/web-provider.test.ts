// The package's web provider through @openfeature/web-sdk (static context: the visitor is set
// once, evaluations are synchronous), against the real server on a real port: reasons and
// errors, a flag flip heard as CONFIGURATION_CHANGED, and the visitor's exposure and events
// counted in the experiment's results.
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { evaluateConfig } from 'experimentation-api';
import { ExperimentationWebProvider } from 'experimentation-api/openfeature';
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { arrangeReasons, unreadableConfigFetch } from '../support/openfeature';
import { EVENT, EXPERIMENT, FLAG, servedStatistics } from '../support/sdk';

let domains = 0;

describe.each(engines)('the OpenFeature web provider on %s', (engine) => {
  const server = useServer(engine);

  it('when a visitor reads flags, then each answers synchronously with its reason, and an error code where it cannot', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const provider = new ExperimentationWebProvider({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
    const domain = `web-provider-${++domains}`;
    await OpenFeature.setContext(domain, { targetingKey: 'visitor-1', plan: 'pro' });
    await OpenFeature.setProviderAndWait(domain, provider);
    const client = OpenFeature.getClient(domain);
    try {
      // Act and assert
      expect(client.getBooleanDetails('static_bool', false)).toMatchObject({ value: true, reason: 'STATIC', variant: 'default' });
      expect(client.getStringDetails('plan_label', 'none')).toMatchObject({ value: 'gold', reason: 'TARGETING_MATCH', variant: 'rule_0' });
      expect(client.getNumberDetails('rollout_limit', 0)).toMatchObject({ value: 2.5, reason: 'SPLIT', variant: 'rule_0' });
      expect(client.getObjectDetails('layout', {})).toMatchObject({ value: {}, reason: 'DISABLED' });
      expect(client.getStringDetails('missing', 'x')).toMatchObject({ value: 'x', reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
      expect(client.getBooleanDetails('old_label', false)).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'TYPE_MISMATCH' });
      // A context change needs no request: the next read decides for the new visitor.
      await OpenFeature.setContext(domain, { targetingKey: 'visitor-2', plan: 'free' });
      expect(client.getStringDetails('plan_label', 'none')).toMatchObject({ value: 'plain', reason: 'DEFAULT', variant: 'default' });
      await OpenFeature.setContext(domain, { plan: 'free' });
      expect(client.getNumberDetails('rollout_limit', 0)).toMatchObject({ value: 0, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' });
    } finally {
      await OpenFeature.clearContext(domain);
      await provider.onClose();
    }
  });

  it('when the visitor is not a valid context, the config serves what cannot be read, the config has not come yet, or the key is refused, then INVALID_CONTEXT, PARSE_ERROR, PROVIDER_NOT_READY and PROVIDER_FATAL', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const options = { baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey };
    const provider = new ExperimentationWebProvider(options);
    // A service whose boolean flag serves text this SDK cannot read as a boolean.
    const unreadable = new ExperimentationWebProvider({ ...options, stream: false, fetch: unreadableConfigFetch });
    // Asked before any config, in the same turn as it is made: the provider itself answers PROVIDER_NOT_READY.
    const early = new ExperimentationWebProvider(options);
    const beforeConfig = early.resolveBooleanEvaluation('static_bool', false, { targetingKey: 'visitor-1' });
    const refused = new ExperimentationWebProvider({ ...options, ingestKey: 'esk_not_the_key' });
    const [domain, unreadableDomain, fatalDomain] = [++domains, ++domains, ++domains].map((n) => `web-provider-${n}`) as [string, string, string];
    try {
      await OpenFeature.setContext(domain, { targetingKey: 'visitor-1', nested: { plan: 'pro' } });
      await OpenFeature.setProviderAndWait(domain, provider);
      await OpenFeature.setContext(unreadableDomain, { targetingKey: 'visitor-1' });
      await OpenFeature.setProviderAndWait(unreadableDomain, unreadable);
      await OpenFeature.setContext(fatalDomain, { targetingKey: 'visitor-1' });
      const client = OpenFeature.getClient(domain);

      // Act and assert
      expect(client.getStringDetails('old_label', 'x')).toMatchObject({ value: 'x', reason: 'ERROR', errorCode: 'INVALID_CONTEXT' });
      await OpenFeature.setContext(domain, { targetingKey: 'has space' });
      expect(client.getStringDetails('old_label', 'x')).toMatchObject({ value: 'x', reason: 'ERROR', errorCode: 'INVALID_CONTEXT' });
      expect(OpenFeature.getClient(unreadableDomain).getBooleanDetails('static_bool', false)).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'PARSE_ERROR' });
      expect(beforeConfig).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'PROVIDER_NOT_READY' });
      const refusal = await OpenFeature.setProviderAndWait(fatalDomain, refused).then(
        () => 'ready',
        (error: { code?: string }) => error.code,
      );
      expect(refusal).toBe('PROVIDER_FATAL');
      expect(OpenFeature.getClient(fatalDomain).getBooleanDetails('static_bool', false)).toMatchObject({ value: false, reason: 'ERROR', errorCode: 'PROVIDER_FATAL' });
    } finally {
      for (const name of [domain, unreadableDomain, fatalDomain]) await OpenFeature.clearContext(name);
      for (const each of [provider, unreadable, early, refused]) await each.onClose();
    }
  });

  it('when a flag flips, then CONFIGURATION_CHANGED is heard and the next read serves the new value', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeReasons(team);
    const provider = new ExperimentationWebProvider({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
    const domain = `web-provider-${++domains}`;
    await OpenFeature.setContext(domain, { targetingKey: 'visitor-1' });
    await OpenFeature.setProviderAndWait(domain, provider);
    const client = OpenFeature.getClient(domain);
    const seen: boolean[] = [];
    let flipped: () => void = () => undefined;
    const heard = new Promise<void>((resolve) => (flipped = resolve));
    client.addHandler(ProviderEvents.ConfigurationChanged, () => {
      seen.push(client.getBooleanValue('static_bool', true));
      if (seen.at(-1) === false) flipped();
    });
    try {
      expect(client.getBooleanValue('static_bool', false)).toBe(true);

      // Act
      await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'static_bool' } }, body: { value: 'false' } });
      await heard;

      // Assert
      expect(seen.at(-1)).toBe(false);
      expect(client.getBooleanDetails('static_bool', true)).toMatchObject({ value: false, reason: 'STATIC' });
    } finally {
      await OpenFeature.clearContext(domain);
      await provider.onClose();
    }
  });

  it("when visitors read the experiment's flag and track, then their exposures and events are counted in the experiment's results", async () => {
    // Arrange: one page (domain) per visitor, as browsers are.
    const team = await server().newTeam();
    await arrangeReasons(team);
    const expected: Record<string, { participants: number; conversions: number; unique: number }> = {
      control: { participants: 0, conversions: 0, unique: 0 },
      treatment: { participants: 0, conversions: 0, unique: 0 },
    };
    // Act
    for (let i = 0; i < 8; i++) {
      const provider = new ExperimentationWebProvider({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
      const domain = `web-provider-${++domains}`;
      await OpenFeature.setContext(domain, { targetingKey: `visitor-${i}` });
      await OpenFeature.setProviderAndWait(domain, provider);
      const client = OpenFeature.getClient(domain);
      client.getStringValue(FLAG, 'none');
      client.track(EVENT);
      const variant = evaluateConfig(provider.client.config()!, { key: `visitor-${i}` }).experiments[EXPERIMENT];
      if (variant) expected[variant] = { participants: expected[variant]!.participants + 1, conversions: expected[variant]!.conversions + 1, unique: expected[variant]!.unique + 1 };
      await OpenFeature.clearContext(domain);
      await provider.onClose();
    }
    // Assert
    expect(await servedStatistics(team.api, team.id)).toEqual(expected);
  });
});
