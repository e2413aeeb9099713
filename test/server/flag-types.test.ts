// Typed flags: a flag's `type` says how its text values read; values that do not read as it are
// refused naming their field; the config carries the type; the SDK and `POST …/evaluate` answer
// typed values; a flag without a type answers as before; a type change checks every value.
import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { createClient } from 'experimentation-api/sdk';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type FeatureCreate = components['schemas']['FeatureCreate'];
type FeatureUpdate = components['schemas']['FeatureUpdate'];

describe.each(engines)('typed flags on %s', (engine) => {
  const server = useServer(engine);

  const create = (team: TestTeam, body: FeatureCreate) => team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body });
  const update = (team: TestTeam, feature: string, body: FeatureUpdate) =>
    team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature } }, body });

  async function typedTeam(): Promise<TestTeam> {
    const team = await server().newTeam();
    for (const body of [
      { key: 'dark_mode', type: 'boolean', enabled: true, value: 'false', rules: [{ type: 'force', conditions: { plan: 'pro' }, value: 'true' }] },
      { key: 'discount', type: 'number', enabled: true, value: '0.25' },
      { key: 'limits', type: 'json', enabled: true, value: '{"limit": 10, "tags": ["a"]}' },
      { key: 'greeting', type: 'string', enabled: true, value: 'hello' },
      { key: 'legacy', enabled: true, value: 'true' },
    ] satisfies FeatureCreate[]) {
      expect((await create(team, body)).response.status).toBe(200);
    }
    return team;
  }

  it('when a flag is created without a type, then it is a string flag and serves its text as before', async () => {
    const team = await server().newTeam();
    const { data } = await create(team, { key: 'plain', enabled: true, value: 'true' });
    expect(data?.data).toMatchObject({ key: 'plain', type: 'string', value: 'true' });
    const evaluated = await team.ingest.POST('/api/teams/{team}/evaluate', { params: { path: { team: team.id } }, body: { participant: 'u1' } });
    expect(evaluated.data?.data.features.plain).toEqual({ value: 'true', reason: 'default', rule: null });
  });

  it('when values do not read as the type, then the answer is a 400 naming each field and nothing is stored', async () => {
    const team = await server().newTeam();
    const cases: Array<[FeatureCreate, string]> = [
      [{ key: 'a', type: 'boolean', value: 'yes' }, '/body/value'],
      [{ key: 'b', type: 'number', value: 'NaN' }, '/body/value'],
      [{ key: 'c', type: 'number', value: '+1' }, '/body/value'],
      [{ key: 'd', type: 'json', value: '[1, 2]' }, '/body/value'],
      [{ key: 'e', type: 'json', value: '{"open": ' }, '/body/value'],
      [{ key: 'f', type: 'boolean', value: 'true', rules: [{ type: 'rollout', percentage: 10, value: 'True' }] }, '/body/rules/0/value'],
    ];
    for (const [body, path] of cases) {
      const { response, error } = await create(team, body);
      expectProblem(response, error, 400, 'Bad Request', [path]);
    }
    const listed = await team.api.GET('/api/teams/{team}/features', { params: { path: { team: team.id } } });
    expect(listed.data?.data).toEqual([]);
  });

  it('when an experiment rule gives a variant a value of another type, then the 400 names that variant', async () => {
    const team = await server().newTeam();
    const { response, error } = await create(team, {
      key: 'x',
      type: 'number',
      rules: [{ type: 'experiment', experiment: 'whatever', variants: { control: '1', treatment: 'two' } }],
    });
    expectProblem(response, error, 400, 'Bad Request', ['/body/rules/0/variants/treatment']);
  });

  it('when the type changes while stored values are of the old type, then it is refused naming the type; with new values in the same request it is accepted', async () => {
    const team = await server().newTeam();
    await create(team, { key: 'mode', enabled: true, value: 'dark', rules: [{ type: 'force', conditions: { plan: 'pro' }, value: 'light' }] });
    const refused = await update(team, 'mode', { type: 'boolean' });
    expectProblem(refused.response, refused.error, 400, 'Bad Request', ['/body/type']);
    expect(JSON.stringify(refused.error)).toContain('value');
    const kept = await team.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'mode' } } });
    expect(kept.data?.data).toMatchObject({ type: 'string', value: 'dark' });

    const changed = await update(team, 'mode', { type: 'boolean', value: 'true', rules: [{ type: 'force', conditions: { plan: 'pro' }, value: 'false' }] });
    expect(changed.response.status).toBe(200);
    expect(changed.data?.data).toMatchObject({ type: 'boolean', value: 'true' });
    // A string flag takes any text: changing back needs no new values.
    expect((await update(team, 'mode', { type: 'string' })).data?.data).toMatchObject({ type: 'string', value: 'true' });
  });

  it('when the config is read, then each flag carries its type', async () => {
    const team = await typedTeam();
    const { data } = await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } });
    expect(Object.fromEntries(data!.data.features.map((f) => [f.key, f.type]))).toEqual({
      dark_mode: 'boolean',
      discount: 'number',
      limits: 'json',
      greeting: 'string',
      legacy: 'string',
    });
  });

  it('when flags are evaluated by the SDK, then it serves values read as their types; POST …/evaluate keeps the text', async () => {
    const team = await typedTeam();
    const evaluated = await team.ingest.POST('/api/teams/{team}/evaluate', { params: { path: { team: team.id } }, body: { participant: 'u1', attributes: { plan: 'pro' } } });
    expect(evaluated.data!.data.features.dark_mode!.value).toBe('true');
    expect(evaluated.data!.data.features.discount!.value).toBe('0.25');

    const client = createClient({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey, stream: false });
    try {
      await client.ready();
      const darkMode: boolean | null = client.feature<boolean>('dark_mode', 'u1', { plan: 'pro' });
      expect(darkMode).toBe(true);
      expect(client.feature<boolean>('dark_mode', 'u2', { plan: 'free' })).toBe(false);
      expect(client.feature<number>('discount', 'u1')).toBe(0.25);
      const limits = client.feature<{ limit: number }>('limits', 'u1');
      expect(limits).toEqual({ limit: 10, tags: ['a'] });
      expect(Object.isFrozen(limits)).toBe(true);
      const legacy: string | null = client.feature('legacy', 'u1');
      expect(legacy).toBe('true');
      expect(client.feature('missing', 'u1')).toBeNull();
    } finally {
      await client.close();
    }
  });
});
