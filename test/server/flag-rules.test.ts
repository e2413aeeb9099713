import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, stopExperiment } from '../support/fixtures';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type FeatureRule = components['schemas']['FeatureRule'];
type Evaluation = components['schemas']['Evaluation'];

const PAST = '2020-01-01T00:00:00.000Z';
const FUTURE = '2999-01-01T00:00:00.000Z';

/** The published rollout rule (RolloutRule), computed independently of the server. */
function expectedInRollout(flag: string, participant: string, percentage: number): boolean {
  const h = createHash('sha256').update(`${flag}#${participant}`, 'utf8').digest().readUInt32BE(0);
  return Math.floor((h * 10000) / 2 ** 32) < Math.round(percentage * 100);
}

describe.each(engines)('flag rules on %s', (engine) => {
  const server = useServer(engine);

  async function flag(team: TestTeam, key: string, rules: FeatureRule[], options: { enabled?: boolean; value?: string | null } = {}) {
    const { response, error } = await team.api.POST('/api/teams/{team}/features', {
      params: { path: { team: team.id } },
      body: { key, enabled: options.enabled ?? true, value: options.value ?? 'default', rules },
    });
    expect(response.status, JSON.stringify(error)).toBe(200);
  }

  async function setRules(team: TestTeam, key: string, rules: FeatureRule[]) {
    const { response, error } = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: key } }, body: { rules } });
    expect(response.status, JSON.stringify(error)).toBe(200);
  }

  async function evaluate(team: TestTeam, participant: string, attributes?: Record<string, string | number | boolean>, enrol?: boolean): Promise<Evaluation> {
    const { response, data, error } = await team.ingest.POST('/api/teams/{team}/evaluate', { params: { path: { team: team.id } }, body: { participant, attributes, enrol } });
    expect(response.status, JSON.stringify(error)).toBe(200);
    return data!.data;
  }

  async function served(team: TestTeam, key: string, participant: string, attributes?: Record<string, string | number | boolean>) {
    return (await evaluate(team, participant, attributes)).features[key];
  }

  describe('rules of a flag', () => {
    it('when a flag is created with rules, then they are stored, read back and in the team config in order', async () => {
      // Arrange
      const team = await server().newTeam();
      const rules: FeatureRule[] = [
        { type: 'force', conditions: { country: 'DE' }, value: 'de' },
        { type: 'rollout', percentage: 12.5, value: 'some', starts_at: PAST, ends_at: null },
      ];
      // Act
      await flag(team, 'banner', rules);
      // Assert
      const read = await team.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'banner' } } });
      expect(read.data?.data.rules).toEqual(rules);
      const config = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
      expect(config.data?.data.features).toEqual([{ key: 'banner', type: 'string', enabled: true, value: 'default', rules }]);
    });

    it('when a flag is created without rules, then it has none and serves its own value', async () => {
      const team = await server().newTeam();
      const created = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'plain', enabled: true, value: 'v' } });
      expect(created.data?.data.rules).toEqual([]);
      expect(await served(team, 'plain', 'user-1')).toEqual({ value: 'v', reason: 'default', rule: null });
    });

    it('when a force rule has conditions, then it serves the participants that match them only', async () => {
      const team = await server().newTeam();
      await flag(team, 'banner', [{ type: 'force', conditions: { country: { $in: ['DE', 'AT'] } }, value: 'german' }]);

      expect(await served(team, 'banner', 'user-1', { country: 'AT' })).toEqual({ value: 'german', reason: 'rule', rule: 0 });
      expect(await served(team, 'banner', 'user-1', { country: 'FR' })).toEqual({ value: 'default', reason: 'default', rule: null });
      expect(await served(team, 'banner', 'user-1')).toEqual({ value: 'default', reason: 'default', rule: null });
    });

    it('when several rules apply, then the first one in order wins', async () => {
      const team = await server().newTeam();
      await flag(team, 'banner', [
        { type: 'force', conditions: { plan: 'pro' }, value: 'pro' },
        { type: 'force', value: 'everyone' },
        { type: 'force', conditions: { plan: 'pro' }, value: 'never reached' },
      ]);

      expect(await served(team, 'banner', 'user-1', { plan: 'pro' })).toEqual({ value: 'pro', reason: 'rule', rule: 0 });
      expect(await served(team, 'banner', 'user-1', { plan: 'free' })).toEqual({ value: 'everyone', reason: 'rule', rule: 1 });
    });

    it('when the rules are replaced with PUT, then the new list alone applies', async () => {
      const team = await server().newTeam();
      await flag(team, 'banner', [{ type: 'force', value: 'old' }]);
      await setRules(team, 'banner', [{ type: 'force', value: 'new' }]);
      expect((await served(team, 'banner', 'user-1'))?.value).toBe('new');
      await setRules(team, 'banner', []);
      expect(await served(team, 'banner', 'user-1')).toEqual({ value: 'default', reason: 'default', rule: null });
    });

    it('when a flag is disabled, then it serves null whatever its rules', async () => {
      const team = await server().newTeam();
      await flag(team, 'banner', [{ type: 'force', value: 'forced' }], { enabled: false });
      expect(await served(team, 'banner', 'user-1')).toEqual({ value: null, reason: 'disabled', rule: null });
    });
  });

  describe('rollout rules', () => {
    it('when a rollout is at 30 %, then exactly the participants the published hash puts under 3000 of 10000 are served', async () => {
      const team = await server().newTeam();
      await flag(team, 'new_checkout', [{ type: 'rollout', percentage: 30, value: 'on' }], { value: 'off' });
      const participants = Array.from({ length: 120 }, (_, i) => `user-${i}`);

      const values = await Promise.all(participants.map(async (p) => (await served(team, 'new_checkout', p))?.value));

      expect(values).toEqual(participants.map((p) => (expectedInRollout('new_checkout', p, 30) ? 'on' : 'off')));
      const on = values.filter((v) => v === 'on').length;
      expect(on).toBeGreaterThan(15);
      expect(on).toBeLessThan(60);
    });

    it('when a rollout is ramped from 10 to 50 %, then everyone served at 10 % is still served, and more are', async () => {
      const team = await server().newTeam();
      await flag(team, 'new_checkout', [{ type: 'rollout', percentage: 10, value: 'on' }], { value: 'off' });
      const participants = Array.from({ length: 150 }, (_, i) => `visitor-${i}`);
      const at10 = new Set<string>();
      for (const p of participants) if ((await served(team, 'new_checkout', p))?.value === 'on') at10.add(p);

      await setRules(team, 'new_checkout', [{ type: 'rollout', percentage: 50, value: 'on' }]);
      const at50 = new Set<string>();
      for (const p of participants) if ((await served(team, 'new_checkout', p))?.value === 'on') at50.add(p);

      expect(at10.size).toBeGreaterThan(0);
      for (const p of at10) expect(at50.has(p), p).toBe(true);
      expect(at50.size).toBeGreaterThan(at10.size);
    });

    it('when a rollout has conditions, then only matching participants can be in it', async () => {
      const team = await server().newTeam();
      await flag(team, 'new_checkout', [{ type: 'rollout', conditions: { country: 'DE' }, percentage: 100, value: 'on' }], { value: 'off' });
      expect((await served(team, 'new_checkout', 'user-1', { country: 'DE' }))?.value).toBe('on');
      expect((await served(team, 'new_checkout', 'user-1', { country: 'US' }))?.value).toBe('off');
    });

    it('when a rollout is at 0 %, then no one is served by it', async () => {
      const team = await server().newTeam();
      await flag(team, 'new_checkout', [{ type: 'rollout', percentage: 0, value: 'on' }], { value: 'off' });
      const values = await Promise.all(Array.from({ length: 30 }, (_, i) => served(team, 'new_checkout', `u-${i}`)));
      expect(values.every((v) => v?.value === 'off')).toBe(true);
    });
  });

  describe('schedules', () => {
    it('when a rule starts in the future or ended in the past, then it does not apply; when now is inside its window, it does', async () => {
      const team = await server().newTeam();
      await flag(team, 'sale', [
        { type: 'force', starts_at: FUTURE, value: 'not yet' },
        { type: 'force', ends_at: PAST, value: 'over' },
        { type: 'force', starts_at: PAST, ends_at: FUTURE, value: 'now' },
      ]);
      expect(await served(team, 'sale', 'user-1')).toEqual({ value: 'now', reason: 'rule', rule: 2 });
    });

    it('when a rule ends exactly as it starts or before, then it is a 400 naming ends_at', async () => {
      const team = await server().newTeam();
      const { response, error } = await team.api.POST('/api/teams/{team}/features', {
        params: { path: { team: team.id } },
        body: { key: 'sale', rules: [{ type: 'force', value: 'x' }, { type: 'force', starts_at: FUTURE, ends_at: PAST, value: 'x' }] },
      });
      expectProblem(response, error, 400, 'Bad Request', ['/body/rules/1/ends_at']);
    });
  });

  describe('experiment rules', () => {
    it('when a participant gets a variant with a value, then the flag serves that value, and the variant matches the experiment answer', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'checkout_test');
      await flag(team, 'checkout', [{ type: 'experiment', experiment: 'checkout_test', variants: { control: 'classic', treatment: 'one_page' } }]);

      for (const participant of ['a', 'b', 'c', 'd', 'e', 'f']) {
        const evaluation = await evaluate(team, participant);
        const variant = evaluation.experiments.checkout_test;
        expect(variant).toMatch(/^(control|treatment)$/);
        expect(evaluation.features.checkout).toEqual({ value: variant === 'control' ? 'classic' : 'one_page', reason: 'rule', rule: 0 });
      }
    });

    it('when the variant a participant gets has no value in the rule, then evaluation goes on with the next rule', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'checkout_test');
      await flag(team, 'checkout', [
        { type: 'experiment', experiment: 'checkout_test', variants: { treatment: 'one_page' } },
        { type: 'force', value: 'fallback' },
      ]);
      const participants = Array.from({ length: 20 }, (_, i) => `p-${i}`);
      const evaluations = await Promise.all(participants.map((p) => evaluate(team, p)));
      for (const evaluation of evaluations) {
        const expected = evaluation.experiments.checkout_test === 'treatment' ? { value: 'one_page', reason: 'rule', rule: 0 } : { value: 'fallback', reason: 'rule', rule: 1 };
        expect(evaluation.features.checkout).toEqual(expected);
      }
      expect(new Set(evaluations.map((e) => e.features.checkout?.rule))).toEqual(new Set([0, 1]));
    });

    it('when the experiment is stopped or deleted after the rule was written, then the rule does not apply and the flag falls through', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'stopping');
      await createExperiment(team, 'deleting');
      await flag(team, 'checkout', [
        { type: 'experiment', experiment: 'stopping', variants: { control: 'a', treatment: 'a' } },
        { type: 'experiment', experiment: 'deleting', variants: { control: 'b', treatment: 'b' } },
      ]);
      expect((await served(team, 'checkout', 'user-1'))?.value).toBe('a');

      await stopExperiment(team, 'stopping');
      expect((await served(team, 'checkout', 'user-1'))?.value).toBe('b');

      await stopExperiment(team, 'deleting');
      const deleted = await team.api.DELETE('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: 'deleting' } } });
      expect(deleted.response.status).toBe(200);
      expect(await served(team, 'checkout', 'user-1')).toEqual({ value: 'default', reason: 'default', rule: null });
      const read = await team.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'checkout' } } });
      expect(read.data?.data.rules).toHaveLength(2);
    });

    it('when the experiment is a draft, then the rule may be written and does not apply until the experiment runs', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'later', { start: false });
      await flag(team, 'checkout', [{ type: 'experiment', experiment: 'later', variants: { control: 'x', treatment: 'x' } }]);
      expect((await served(team, 'checkout', 'user-1'))?.reason).toBe('default');

      await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: team.id, experiment: 'later' } } });
      expect(await served(team, 'checkout', 'user-1')).toEqual({ value: 'x', reason: 'rule', rule: 0 });
    });

    it('when a rule names an unknown experiment, then it is a 404 naming the field, and nothing is stored', async () => {
      const team = await server().newTeam();
      const { response, error } = await team.api.POST('/api/teams/{team}/features', {
        params: { path: { team: team.id } },
        body: { key: 'checkout', rules: [{ type: 'force', value: 'x' }, { type: 'experiment', experiment: 'nope', variants: { control: 'x' } }] },
      });
      expectProblem(response, error, 404, 'Not Found');
      expect(error?.detail).toContain('/body/rules/1/experiment');
      const read = await team.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'checkout' } } });
      expect(read.response.status).toBe(404);
    });

    it('when a rule gives a value for a variant the experiment does not have, then it is a 409 naming it, and the flag is unchanged', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'checkout_test');
      await flag(team, 'checkout', [{ type: 'force', value: 'kept' }]);
      const { response, error } = await team.api.PUT('/api/teams/{team}/features/{feature}', {
        params: { path: { team: team.id, feature: 'checkout' } },
        body: { rules: [{ type: 'experiment', experiment: 'checkout_test', variants: { control: 'x', purple: 'y' } }] },
      });
      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain('/body/rules/0/variants/purple');
      expect((await served(team, 'checkout', 'user-1'))?.value).toBe('kept');
    });

    it('when a rule names a stopped experiment, then it is a 409', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'over');
      await stopExperiment(team, 'over');
      const { response, error } = await team.api.POST('/api/teams/{team}/features', {
        params: { path: { team: team.id } },
        body: { key: 'checkout', rules: [{ type: 'experiment', experiment: 'over', variants: { control: 'x' } }] },
      });
      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain('/body/rules/0/experiment');
    });
  });

  describe('invalid rules', () => {
    async function refused(team: TestTeam, rules: unknown[], paths: string[]) {
      const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/features`, {
        method: 'POST',
        headers: { authorization: `Bearer ${team.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ key: 'bad', rules }),
      });
      expectProblem(response, await response.json(), 400, 'Bad Request', paths);
    }

    it('when a percentage has more than two decimals or is above 100, then it is a 400 naming it', async () => {
      const team = await server().newTeam();
      await refused(team, [{ type: 'rollout', percentage: 12.345, value: 'x' }], ['/body/rules/0/percentage']);
      await refused(team, [{ type: 'rollout', percentage: 101, value: 'x' }], ['/body/rules/0/percentage']);
    });

    it('when a condition is malformed, then it is a 400 naming the path inside the rule', async () => {
      const team = await server().newTeam();
      await refused(team, [{ type: 'force', conditions: { country: { $nope: 1 } }, value: 'x' }], ['/body/rules/0/conditions/country/$nope']);
    });

    it('when a rule has an unknown type or lacks its value, then it is a 400 naming the rule', async () => {
      const team = await server().newTeam();
      await refused(team, [{ type: 'sometimes', value: 'x' }], ['/body/rules/0/type']);
      await refused(team, [{ type: 'rollout', percentage: 5 }], ['/body/rules/0/value']);
    });
  });
});
