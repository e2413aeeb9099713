import { describe, expect, it } from 'vitest';
import { evaluateConfig, type components } from 'experimentation-api';
import { setQuota } from '../../server/admin/service';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, expectedVariant, ingestOk } from '../support/fixtures';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type EvaluateRequest = components['schemas']['EvaluateRequest'];

describe.each(engines)('POST /api/teams/{team}/evaluate on %s', (engine) => {
  const server = useServer(engine);

  function evaluate(team: TestTeam, body: EvaluateRequest) {
    return team.ingest.POST('/api/teams/{team}/evaluate', { params: { path: { team: team.id } }, body });
  }

  async function participantStatus(team: TestTeam, key: string): Promise<number> {
    const { response } = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: key } } });
    return response.status;
  }

  async function configOf(team: TestTeam) {
    const { data } = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
    return data!.data;
  }

  /** A team with a running experiment and a flag that uses it, after a rule for Germany. */
  async function arranged(): Promise<TestTeam> {
    const team = await server().newTeam();
    await createExperiment(team, 'checkout_test');
    const created = await team.api.POST('/api/teams/{team}/features', {
      params: { path: { team: team.id } },
      body: {
        key: 'checkout',
        enabled: true,
        value: 'classic',
        rules: [
          { type: 'force', conditions: { country: 'DE' }, value: 'german' },
          { type: 'experiment', experiment: 'checkout_test', variants: { control: 'classic', treatment: 'one_page' } },
        ],
      },
    });
    expect(created.response.status).toBe(200);
    await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'dark_mode', enabled: false, value: 'on' } });
    return team;
  }

  it('when enrol is not asked, then the answer is the hash of the config, and nothing is stored or counted', async () => {
    // Arrange
    const team = await arranged();
    await setQuota(server().storage.db, team.id, 1);
    const config = await configOf(team);
    // Act
    const first = await evaluate(team, { participant: 'user-1' });
    const second = await evaluate(team, { participant: 'user-1', attributes: { country: 'DE' }, enrol: false });
    // Assert
    expect(first.response.status).toBe(200);
    const variant = expectedVariant(config.experiments[0]!.seed, 'user-1', config.experiments[0]!.variants)!;
    expect(first.data?.data).toEqual({
      features: {
        checkout: { value: variant === 'control' ? 'classic' : 'one_page', reason: 'rule', rule: 1 },
        dark_mode: { value: null, reason: 'disabled', rule: null },
      },
      experiments: { checkout_test: variant },
      experiment_reasons: { checkout_test: 'assigned' },
    });
    expect(second.data?.data.features.checkout).toEqual({ value: 'german', reason: 'rule', rule: 0 });
    expect(await participantStatus(team, 'user-1')).toBe(404);
    // The quota of 1 is untouched: an ingest still passes.
    await ingestOk(team, { participant: 'someone' });
  });

  it('when enrol is true, then the participant is stored with its attributes and enrolled, and the answer is its stored assignment', async () => {
    const team = await arranged();

    const { data, response } = await evaluate(team, { participant: 'user-2', attributes: { country: 'FR' }, enrol: true });

    expect(response.status).toBe(200);
    const stored = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant: 'user-2' } } });
    expect(stored.data?.data).toEqual([expect.objectContaining({ experiment: 'checkout_test', variant: data!.data.experiments.checkout_test })]);
    const participant = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'user-2' } } });
    expect(participant.data?.data.attributes).toEqual({ country: 'FR' });
  });

  it('when the participant was enrolled in another variant than its hash, then enrol answers the stored one (sticky) and the flag serves by it; without enrol, the hash', async () => {
    const team = await arranged();
    const config = await configOf(team);
    const participant = Array.from({ length: 100 }, (_, i) => `p-${i}`).find((p) => expectedVariant(config.experiments[0]!.seed, p, config.experiments[0]!.variants) === 'control')!;
    await ingestOk(team, { participant, experiment: 'checkout_test', variant: 'treatment' });

    const enrolled = await evaluate(team, { participant, enrol: true });
    const hashed = await evaluate(team, { participant });

    expect(enrolled.data?.data.experiments.checkout_test).toBe('treatment');
    expect(enrolled.data?.data.experiment_reasons.checkout_test).toBe('enrolled');
    expect(enrolled.data?.data.features.checkout?.value).toBe('one_page');
    expect(hashed.data?.data.experiments.checkout_test).toBe('control');
    expect(hashed.data?.data.features.checkout?.value).toBe('classic');
  });

  it('when an experiment gives a participant no variant, then its reason names the check that kept it out: conditions before coverage', async () => {
    const team = await arranged();
    const updated = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', {
      params: { path: { team: team.id, experiment: 'checkout_test' } },
      body: { conditions: { country: 'DE' }, coverage: 50 },
    });
    expect(updated.response.status).toBe(200);
    const participants = Array.from({ length: 40 }, (_, i) => `v-${i}`);

    const answers = await Promise.all(
      participants.flatMap((participant) => ['DE', 'FR'].map(async (country) => ({ country, ...(await evaluate(team, { participant, attributes: { country } })).data!.data }))),
    );

    for (const answer of answers.filter((a) => a.country === 'FR')) {
      expect(answer.experiments.checkout_test).toBeNull();
      expect(answer.experiment_reasons.checkout_test).toBe('conditions');
    }
    const germans = answers.filter((a) => a.country === 'DE');
    for (const answer of germans) expect(answer.experiment_reasons.checkout_test).toBe(answer.experiments.checkout_test === null ? 'coverage' : 'assigned');
    // Both sides of the 50 % coverage are seen.
    expect(new Set(germans.map((a) => a.experiment_reasons.checkout_test))).toEqual(new Set(['coverage', 'assigned']));
  });

  it('when the quota is used up, then enrol is a 402 that stores nothing, and evaluation without enrol still answers', async () => {
    const team = await arranged();
    await setQuota(server().storage.db, team.id, 1);
    expect((await evaluate(team, { participant: 'first', enrol: true })).response.status).toBe(200);

    const refused = await evaluate(team, { participant: 'second', enrol: true });

    expectProblem(refused.response, refused.error, 402, 'Quota Exceeded');
    expect(await participantStatus(team, 'second')).toBe(404);
    expect((await evaluate(team, { participant: 'second' })).response.status).toBe(200);
  });

  it('when the package evaluates the config locally, then it answers exactly as the server', async () => {
    const team = await arranged();
    await team.api.POST('/api/teams/{team}/features', {
      params: { path: { team: team.id } },
      body: { key: 'ramp', enabled: true, value: 'off', rules: [{ type: 'rollout', percentage: 37.5, conditions: { plan: { $ne: 'free' } }, value: 'on' }] },
    });
    const config = await configOf(team);
    const cases = Array.from({ length: 40 }, (_, i) => ({ participant: `visitor-${i}`, attributes: { country: i % 3 === 0 ? 'DE' : 'US', plan: i % 2 ? 'free' : 'pro' } }));

    for (const body of cases) {
      const remote = await evaluate(team, body);
      expect(evaluateConfig(config, { key: body.participant, attributes: body.attributes }), body.participant).toEqual(remote.data?.data);
    }
  });

  it('when the body has no participant, then it is a 400 naming it; an API token is accepted as well as the ingest key', async () => {
    const team = await arranged();
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ enrol: true }),
    });
    expectProblem(response, await response.json(), 400, 'Bad Request', ['/body/participant']);
    const withToken = await team.api.POST('/api/teams/{team}/evaluate', { params: { path: { team: team.id } }, body: { participant: 'user-3' } });
    expect(withToken.response.status).toBe(200);
  });
});
