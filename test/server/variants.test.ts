import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type VariantBody = { key: string; description?: string | null; control?: boolean; traffic?: number | null };
type VariantChanges = Partial<VariantBody>;

describe.each(engines)('variants on %s', (engine) => {
  const server = useServer(engine);

  /** A new team with the goal event `purchase` and a draft experiment `exp`. */
  async function teamWithDraft(experiment = 'exp'): Promise<TestTeam> {
    const team = await server().newTeam();
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'purchase' } });
    await newExperiment(team, experiment);
    return team;
  }

  async function newExperiment(team: TestTeam, key: string) {
    const { response } = await team.api.POST('/api/teams/{team}/experiments', {
      params: { path: { team: team.id } },
      body: { key, event: 'purchase' },
    });
    expect(response.status).toBe(200);
  }

  async function create(team: TestTeam, body: VariantBody, experiment = 'exp') {
    return team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
      params: { path: { team: team.id, experiment } },
      body,
    });
  }

  async function add(team: TestTeam, body: VariantBody, experiment = 'exp') {
    const { data, response } = await create(team, body, experiment);
    expect(response.status).toBe(200);
    return data!.data;
  }

  async function get(team: TestTeam, variant: string, experiment = 'exp') {
    return team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}', {
      params: { path: { team: team.id, experiment, variant } },
    });
  }

  async function update(team: TestTeam, variant: string, body: VariantChanges, experiment = 'exp') {
    return team.api.PUT('/api/teams/{team}/experiments/{experiment}/variants/{variant}', {
      params: { path: { team: team.id, experiment, variant } },
      body,
    });
  }

  async function remove(team: TestTeam, variant: string, experiment = 'exp') {
    return team.api.DELETE('/api/teams/{team}/experiments/{experiment}/variants/{variant}', {
      params: { path: { team: team.id, experiment, variant } },
    });
  }

  async function list(team: TestTeam, experiment = 'exp', query: { page?: number; per_page?: number } = {}) {
    return team.api.GET('/api/teams/{team}/experiments/{experiment}/variants', {
      params: { path: { team: team.id, experiment }, query },
    });
  }

  /** [key, traffic, traffic_auto] of every variant, in list order. */
  async function shares(team: TestTeam, experiment = 'exp') {
    const { data } = await list(team, experiment);
    return data!.data.map((v) => [v.key, v.traffic, v.traffic_auto]);
  }

  async function transition(team: TestTeam, action: 'start' | 'stop', experiment = 'exp') {
    const path = action === 'start' ? '/api/teams/{team}/experiments/{experiment}/start' : '/api/teams/{team}/experiments/{experiment}/stop';
    const { response } = await team.api.POST(path, { params: { path: { team: team.id, experiment } } });
    expect(response.status).toBe(200);
  }

  describe('POST …/variants', () => {
    it('when only a key is given, then the variant takes the defaults and the whole automatic share', async () => {
      const team = await teamWithDraft();

      const { data, response } = await create(team, { key: 'control' });

      expect(response.status).toBe(200);
      expect(data?.data).toEqual({
        key: 'control',
        description: null,
        control: false,
        traffic: 100,
        traffic_auto: true,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(Date.parse(data!.data.created_at)).not.toBeNaN();
    });

    it('when every field is given, then they are stored as given', async () => {
      const team = await teamWithDraft();

      const variant = await add(team, { key: 'control', description: 'the baseline', control: true, traffic: 60 });

      expect(variant).toMatchObject({ key: 'control', description: 'the baseline', control: true, traffic: 60, traffic_auto: false });
      expect((await get(team, 'control')).data?.data).toEqual(variant);
    });

    it('when no traffic is set on three variants, then they split 34/33/33 in creation order', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'first', control: true });
      await add(team, { key: 'second' });

      const third = await add(team, { key: 'third', traffic: null });

      expect(third).toMatchObject({ traffic: 33, traffic_auto: true });
      expect(await shares(team)).toEqual([
        ['first', 34, true],
        ['second', 33, true],
        ['third', 33, true],
      ]);
    });

    it('when one share is set at 20 and two are unset, then the unset ones get 40 each', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a' });
      await add(team, { key: 'b', control: true, traffic: 20 });

      const c = await add(team, { key: 'c' });

      expect(c).toMatchObject({ traffic: 40, traffic_auto: true });
      expect(await shares(team)).toEqual([
        ['a', 40, true],
        ['b', 20, false],
        ['c', 40, true],
      ]);
    });

    it('when the set shares would sum above 100, then 409 and nothing is added', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a', traffic: 60 });
      await add(team, { key: 'b' });

      const { error, response } = await create(team, { key: 'c', traffic: 50 });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/110/);
      expect(await shares(team)).toEqual([
        ['a', 60, false],
        ['b', 40, true],
      ]);
    });

    it('when the set shares sum to exactly 100, then the unset variants get 0', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a', traffic: 60 });
      await add(team, { key: 'b', traffic: 40 });

      const c = await add(team, { key: 'c' });

      expect(c).toMatchObject({ traffic: 0, traffic_auto: true });
    });

    it('when a second control is created, then 409 names the existing control and nothing is added', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'base', control: true });

      const { error, response } = await create(team, { key: 'rival', control: true });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain("'base'");
      expect(await shares(team)).toEqual([['base', 100, true]]);
    });

    it('when two controls are created at once, then exactly one of them is added', async () => {
      const team = await teamWithDraft();

      const answers = await Promise.all(['left', 'right', 'middle'].map((key) => create(team, { key, control: true })));

      expect(answers.map((a) => a.response.status).sort()).toEqual([200, 409, 409]);
      const { data } = await list(team);
      expect(data?.data.filter((v) => v.control)).toHaveLength(1);
      expect(data?.data).toHaveLength(1);
    });

    it('when set shares are created at once, then their sum never passes 100', async () => {
      const team = await teamWithDraft();

      const answers = await Promise.all(['a', 'b', 'c'].map((key) => create(team, { key, traffic: 40 })));

      expect(answers.map((a) => a.response.status).sort()).toEqual([200, 200, 409]);
      const { data } = await list(team);
      expect(data?.data.reduce((sum, v) => sum + v.traffic, 0)).toBe(80);
    });

    it('when the key is taken in the experiment, then 409 and the first variant stays', async () => {
      const team = await teamWithDraft();
      const first = await add(team, { key: 'same', description: 'first', traffic: 30 });

      const { error, response } = await create(team, { key: 'same', description: 'second' });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain("'same'");
      expect((await list(team)).data?.data).toEqual([first]);
    });

    it('when the key is taken in another experiment only, then it is created', async () => {
      const team = await teamWithDraft();
      await newExperiment(team, 'other');
      await add(team, { key: 'control', control: true }, 'other');

      const { data, response } = await create(team, { key: 'control', control: true });

      expect(response.status).toBe(200);
      expect(data?.data.key).toBe('control');
      expect((await list(team, 'other')).data?.data.map((v) => v.key)).toEqual(['control']);
    });

    it('when traffic is above 100, then 400 names /body/traffic', async () => {
      const team = await teamWithDraft();

      const { error, response } = await create(team, { key: 'greedy', traffic: 101 });

      expectProblem(response, error, 400, 'Bad Request');
      expect(error?.errors?.map((e) => e.path)).toContain('/body/traffic');
    });

    it('when the experiment does not exist, then 404', async () => {
      const team = await teamWithDraft();

      const { error, response } = await create(team, { key: 'orphan' }, 'missing');

      expectProblem(response, error, 404, 'Not Found');
    });
  });

  describe('GET …/variants and …/variants/{variant}', () => {
    it('when there are more variants than a page, then pages follow creation order with meta', async () => {
      const team = await teamWithDraft();
      for (const key of ['zulu', 'alpha', 'mike']) await add(team, { key });

      const { data } = await list(team, 'exp', { per_page: 2, page: 2 });

      expect(data?.data.map((v) => [v.key, v.traffic])).toEqual([['mike', 33]]);
      expect(data?.meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 });
      expect(data?.links.prev).toBe(`/api/teams/${team.id}/experiments/exp/variants?per_page=2&page=1`);
      expect(data?.links.next).toBeNull();
    });

    it('when the experiment has no variants, then the list is empty', async () => {
      const team = await teamWithDraft();

      const { data } = await list(team);

      expect(data?.data).toEqual([]);
      expect(data?.meta).toEqual({ current_page: 1, per_page: 15, total: 0, last_page: 1 });
    });

    it('when one variant is asked for, then it answers with its resolved share', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a', traffic: 30 });
      await add(team, { key: 'b' });

      const { data, response } = await get(team, 'b');

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'b', traffic: 70, traffic_auto: true });
    });

    it('when the variant does not exist, then 404', async () => {
      const team = await teamWithDraft();

      const { error, response } = await get(team, 'missing');

      expectProblem(response, error, 404, 'Not Found');
    });

    it('when the experiment does not exist, then list and get are 404', async () => {
      const team = await teamWithDraft();

      const listed = await list(team, 'missing');
      const one = await get(team, 'a', 'missing');

      expectProblem(listed.response, listed.error, 404, 'Not Found');
      expectProblem(one.response, one.error, 404, 'Not Found');
    });

    it("when another team's token asks, then 404", async () => {
      const team = await teamWithDraft();
      const other = await server().newTeam();
      await add(team, { key: 'mine' });

      const { error, response } = await other.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}', {
        params: { path: { team: team.id, experiment: 'exp', variant: 'mine' } },
      });

      expectProblem(response, error, 404, 'Not Found');
    });

    it('when the variant belongs to another experiment, then 404', async () => {
      const team = await teamWithDraft();
      await newExperiment(team, 'other');
      await add(team, { key: 'elsewhere' }, 'other');

      const { error, response } = await get(team, 'elsewhere');

      expectProblem(response, error, 404, 'Not Found');
    });
  });

  describe('PUT …/variants/{variant}', () => {
    it('when only the description is given, then only it changes', async () => {
      const team = await teamWithDraft();
      const before = await add(team, { key: 'v', control: true, traffic: 70, description: 'old' });

      const { data, response } = await update(team, 'v', { description: 'new' });

      expect(response.status).toBe(200);
      expect(data?.data).toEqual({ ...before, description: 'new', updated_at: expect.any(String) });
      expect((await get(team, 'v')).data?.data).toEqual(data?.data);
    });

    it('when the key is renamed, then the variant answers at the new key only and keeps its place', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a' });
      await add(team, { key: 'b' });

      const { data } = await update(team, 'a', { key: 'a_renamed' });

      expect(data?.data.key).toBe('a_renamed');
      expect((await get(team, 'a')).response.status).toBe(404);
      expect(await shares(team)).toEqual([
        ['a_renamed', 50, true],
        ['b', 50, true],
      ]);
    });

    it('when traffic is set, then the other automatic shares are resolved anew', async () => {
      const team = await teamWithDraft();
      for (const key of ['a', 'b', 'c']) await add(team, { key });

      const { data } = await update(team, 'b', { traffic: 20 });

      expect(data?.data).toMatchObject({ key: 'b', traffic: 20, traffic_auto: false });
      expect(await shares(team)).toEqual([
        ['a', 40, true],
        ['b', 20, false],
        ['c', 40, true],
      ]);
    });

    it('when traffic is set to null, then the variant returns to an automatic share', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a', traffic: 20 });
      await add(team, { key: 'b' });
      await add(team, { key: 'c' });

      const { data, response } = await update(team, 'a', { traffic: null });

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'a', traffic: 34, traffic_auto: true });
      expect(await shares(team)).toEqual([
        ['a', 34, true],
        ['b', 33, true],
        ['c', 33, true],
      ]);
    });

    it('when the set shares would sum above 100, then 409 and the share stays', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a', traffic: 70 });
      await add(team, { key: 'b', traffic: 20 });

      const { error, response } = await update(team, 'b', { traffic: 31 });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/101/);
      expect(await shares(team)).toEqual([
        ['a', 70, false],
        ['b', 20, false],
      ]);
    });

    it('when a variant raises its own share to 100, then its old share is not counted twice', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a', traffic: 60 });

      const { data, response } = await update(team, 'a', { traffic: 100 });

      expect(response.status).toBe(200);
      expect(data?.data.traffic).toBe(100);
    });

    it('when another variant is made the control, then 409 and the control stays', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'base', control: true });
      await add(team, { key: 'other' });

      const { error, response } = await update(team, 'other', { control: true });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain("'base'");
      expect((await list(team)).data?.data.map((v) => [v.key, v.control])).toEqual([
        ['base', true],
        ['other', false],
      ]);
    });

    it('when the control is given control: true again, then it is accepted', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'base', control: true });

      const { data, response } = await update(team, 'base', { control: true });

      expect(response.status).toBe(200);
      expect(data?.data.control).toBe(true);
    });

    it('when the control is moved by clearing the old one first, then both updates succeed', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'base', control: true });
      await add(team, { key: 'other' });

      const cleared = await update(team, 'base', { control: false });
      const moved = await update(team, 'other', { control: true });

      expect(cleared.data?.data.control).toBe(false);
      expect(moved.data?.data.control).toBe(true);
    });

    it('when the new key is taken in the experiment, then 409 and both variants stay', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'a' });
      await add(team, { key: 'b' });
      const before = (await list(team)).data?.data;

      const { error, response } = await update(team, 'b', { key: 'a' });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain("'a'");
      expect((await list(team)).data?.data).toEqual(before);
    });

    it('when the new key is used in another experiment only, then the rename succeeds', async () => {
      const team = await teamWithDraft();
      await newExperiment(team, 'other');
      await add(team, { key: 'taken_there' }, 'other');
      await add(team, { key: 'mine' });

      const { data, response } = await update(team, 'mine', { key: 'taken_there' });

      expect(response.status).toBe(200);
      expect(data?.data.key).toBe('taken_there');
    });

    it('when the variant or the experiment does not exist, then 404', async () => {
      const team = await teamWithDraft();

      const noVariant = await update(team, 'missing', { description: 'x' });
      const noExperiment = await update(team, 'missing', { description: 'x' }, 'nope');

      expectProblem(noVariant.response, noVariant.error, 404, 'Not Found');
      expectProblem(noExperiment.response, noExperiment.error, 404, 'Not Found');
    });
  });

  describe('DELETE …/variants/{variant}', () => {
    it('when the experiment is a draft, then it answers with the variant and the others re-split', async () => {
      const team = await teamWithDraft();
      for (const key of ['a', 'b', 'c']) await add(team, { key });
      const before = (await get(team, 'a')).data!.data;

      const { data, response } = await remove(team, 'a');

      expect(response.status).toBe(200);
      expect(data?.data).toEqual(before);
      expect((await get(team, 'a')).response.status).toBe(404);
      expect(await shares(team)).toEqual([
        ['b', 50, true],
        ['c', 50, true],
      ]);
    });

    it('when the control is deleted, then a new control can be created', async () => {
      const team = await teamWithDraft();
      await add(team, { key: 'base', control: true });
      await remove(team, 'base');

      const { data, response } = await create(team, { key: 'new_base', control: true });

      expect(response.status).toBe(200);
      expect(data?.data.control).toBe(true);
    });

    it('when the variant or the experiment does not exist, then 404', async () => {
      const team = await teamWithDraft();

      const noVariant = await remove(team, 'missing');
      const noExperiment = await remove(team, 'missing', 'nope');

      expectProblem(noVariant.response, noVariant.error, 404, 'Not Found');
      expectProblem(noExperiment.response, noExperiment.error, 404, 'Not Found');
    });
  });

  describe.each(['running', 'stopped'] as const)('when the experiment is %s', (state) => {
    async function teamWithFrozen(): Promise<TestTeam> {
      const team = await teamWithDraft();
      await add(team, { key: 'control', control: true, description: 'baseline' });
      await add(team, { key: 'treatment' });
      await transition(team, 'start');
      if (state === 'stopped') await transition(team, 'stop');
      return team;
    }

    it('then creating a variant is 409 and nothing is added', async () => {
      const team = await teamWithFrozen();
      const before = (await list(team)).data?.data;

      const { error, response } = await create(team, { key: 'late' });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain(state);
      expect((await list(team)).data?.data).toEqual(before);
    });

    it('then updating a variant is 409 and nothing changes', async () => {
      const team = await teamWithFrozen();
      const before = (await list(team)).data?.data;

      const { error, response } = await update(team, 'treatment', { traffic: 10, description: 'changed', key: 'renamed' });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain(state);
      expect((await list(team)).data?.data).toEqual(before);
    });

    it('then deleting a variant is 409 and it stays', async () => {
      const team = await teamWithFrozen();
      const before = (await list(team)).data?.data;

      const { error, response } = await remove(team, 'treatment');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain(state);
      expect((await list(team)).data?.data).toEqual(before);
    });

    it('then the variants can still be read', async () => {
      const team = await teamWithFrozen();

      const { data, response } = await get(team, 'control');

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'control', control: true, traffic: 50, traffic_auto: true, description: 'baseline' });
    });
  });
});
