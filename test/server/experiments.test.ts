import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

const SEED = /^[0-9a-f]{32}$/;

describe.each(engines)('experiments on %s', (engine) => {
  const server = useServer(engine);

  /** A new team with the events `purchase` and `signup`. */
  async function teamWithEvents(): Promise<TestTeam> {
    const team = await server().newTeam();
    for (const key of ['purchase', 'signup']) {
      await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key } });
    }
    return team;
  }

  async function createExperiment(team: TestTeam, key: string, event = 'purchase', description?: string) {
    const { data, response } = await team.api.POST('/api/teams/{team}/experiments', {
      params: { path: { team: team.id } },
      body: { key, event, ...(description === undefined ? {} : { description }) },
    });
    expect(response.status).toBe(200);
    return data!.data;
  }

  async function getExperiment(team: TestTeam, experiment: string) {
    return team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment } } });
  }

  async function addVariant(team: TestTeam, experiment: string, key: string, extra: { control?: boolean; traffic?: number | null } = {}) {
    const { response } = await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
      params: { path: { team: team.id, experiment } },
      body: { key, ...extra },
    });
    expect(response.status).toBe(200);
  }

  async function start(team: TestTeam, experiment: string) {
    return team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: team.id, experiment } } });
  }

  async function stop(team: TestTeam, experiment: string) {
    return team.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { team: team.id, experiment } } });
  }

  /** A draft with a control and a treatment at 50/50, ready to start. */
  async function startable(team: TestTeam, key: string) {
    await createExperiment(team, key);
    await addVariant(team, key, 'control', { control: true });
    await addVariant(team, key, 'treatment');
  }

  async function running(team: TestTeam, key: string) {
    await startable(team, key);
    expect((await start(team, key)).response.status).toBe(200);
  }

  async function stopped(team: TestTeam, key: string) {
    await running(team, key);
    expect((await stop(team, key)).response.status).toBe(200);
  }

  /** POST with a raw body and media type, bypassing the typed client. */
  async function rawPost(team: TestTeam, path: string, contentType: string, body: unknown) {
    const response = await fetch(`${server().baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.token}`, 'content-type': contentType },
      body: JSON.stringify(body),
    });
    return { response, body: (await response.json()) as { data?: { key: string }; errors?: Array<{ path: string }> } };
  }

  describe('POST /api/teams/{team}/experiments', () => {
    it('when the goal event exists, then the experiment is a draft with a fresh 32-hex seed', async () => {
      const team = await teamWithEvents();

      const { data, response } = await team.api.POST('/api/teams/{team}/experiments', {
        params: { path: { team: team.id } },
        body: { key: 'checkout_button', event: 'purchase', description: 'Green or blue?' },
      });

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const experiment = data!.data;
      expect(experiment).toEqual({
        key: 'checkout_button',
        description: 'Green or blue?',
        status: 'draft',
        event: 'purchase',
        guardrails: [],
        minimum_effect: null,
        pre_exposure_days: 14,
        seed: expect.stringMatching(SEED),
        hash_version: 2,
        conditions: {},
        coverage: 100,
        exclusion_group: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        started_at: null,
        stopped_at: null,
      });
      expect(Date.parse(experiment.created_at)).not.toBeNaN();
      expect(experiment.updated_at).toBe(experiment.created_at);
    });

    it('when a minimum effect is given, then it is stored, changed and cleared by PUT; outside (0, 10] it is a 400 naming it and nothing changes', async () => {
      // Arrange
      const team = await teamWithEvents();
      const path = { team: team.id, experiment: 'planned' };
      const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path: { team: team.id } }, body: { key: 'planned', event: 'purchase', minimum_effect: 0.05 } });
      expect(created.data!.data.minimum_effect).toBe(0.05);

      // Act
      const refused = await Promise.all([0, -0.1, 10.5].map((minimum_effect) => team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { minimum_effect } })));
      const changed = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { minimum_effect: 10 } });
      const untouched = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { description: 'still planned' } });
      const cleared = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { minimum_effect: null } });

      // Assert
      for (const answer of refused) {
        expect(answer.response.status).toBe(400);
        expect(JSON.stringify(answer.error)).toContain('/body/minimum_effect');
      }
      expect(changed.data!.data.minimum_effect).toBe(10);
      expect(untouched.data!.data.minimum_effect).toBe(10);
      expect(cleared.data!.data.minimum_effect).toBeNull();
      expect((await team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path } })).data!.data.minimum_effect).toBeNull();
    });

    it('when a pre-exposure window is given, then it is stored and changed by PUT, 0 included; outside 0–60 or not whole it is a 400 naming it and nothing changes', async () => {
      // Arrange
      const team = await teamWithEvents();
      const path = { team: team.id, experiment: 'adjusted' };
      const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path: { team: team.id } }, body: { key: 'adjusted', event: 'purchase', pre_exposure_days: 30 } });
      const refusedAtCreation = await Promise.all([-1, 61, 7.5].map((pre_exposure_days, index) => team.api.POST('/api/teams/{team}/experiments', { params: { path: { team: team.id } }, body: { key: `refused${index}`, event: 'purchase', pre_exposure_days } })));

      // Act
      const refused = await Promise.all([-1, 61, 7.5].map((pre_exposure_days) => team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { pre_exposure_days } })));
      const widest = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { pre_exposure_days: 60 } });
      const untouched = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { description: 'still adjusted' } });
      const off = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { pre_exposure_days: 0 } });

      // Assert
      expect(created.data!.data.pre_exposure_days).toBe(30);
      for (const answer of [...refusedAtCreation, ...refused]) {
        expect(answer.response.status).toBe(400);
        expect(JSON.stringify(answer.error)).toContain('/body/pre_exposure_days');
      }
      expect((await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } })).data!.data.map((experiment) => experiment.key)).toEqual(['adjusted']);
      expect(widest.data!.data.pre_exposure_days).toBe(60);
      expect(untouched.data!.data.pre_exposure_days).toBe(60);
      expect(off.data!.data.pre_exposure_days).toBe(0);
      expect((await team.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path } })).data!.data.pre_exposure_days).toBe(0);
    });

    it('when the description is left out, then it is null', async () => {
      const team = await teamWithEvents();

      const experiment = await createExperiment(team, 'plain');

      expect(experiment.description).toBeNull();
    });

    it('when several experiments are created, then each gets its own seed', async () => {
      const team = await teamWithEvents();
      const other = await teamWithEvents();

      const seeds = [
        (await createExperiment(team, 'one')).seed,
        (await createExperiment(team, 'two')).seed,
        (await createExperiment(team, 'three')).seed,
        (await createExperiment(other, 'one')).seed,
      ];

      for (const seed of seeds) expect(seed).toMatch(SEED);
      expect(new Set(seeds).size).toBe(seeds.length);
    });

    it('when the goal event is missing, then 400 names /body/event and nothing is created', async () => {
      const team = await teamWithEvents();

      const { error, response } = await team.api.POST('/api/teams/{team}/experiments', {
        params: { path: { team: team.id } },
        // @ts-expect-error the contract requires event
        body: { key: 'no_goal' },
      });

      expectProblem(response, error, 400, 'Bad Request');
      expect(error?.errors?.map((e) => e.path)).toContain('/body/event');
      expect((await getExperiment(team, 'no_goal')).response.status).toBe(404);
    });

    it('when the goal event does not exist, then 404 and nothing is created', async () => {
      const team = await teamWithEvents();

      const { error, response } = await team.api.POST('/api/teams/{team}/experiments', {
        params: { path: { team: team.id } },
        body: { key: 'ghost_goal', event: 'nope' },
      });

      expectProblem(response, error, 404, 'Not Found');
      expect(error?.detail).toContain('nope');
      expect((await getExperiment(team, 'ghost_goal')).response.status).toBe(404);
    });

    it("when the goal event belongs to another team, then 404", async () => {
      const team = await server().newTeam();
      await teamWithEvents(); // another team that has a `purchase` event

      const { error, response } = await team.api.POST('/api/teams/{team}/experiments', {
        params: { path: { team: team.id } },
        body: { key: 'borrowed_goal', event: 'purchase' },
      });

      expectProblem(response, error, 404, 'Not Found');
    });

    it.each(['application/json', 'application/vnd.api+json'])(
      'when algorithm_type is sent as %s, then 400 names it and nothing is created',
      async (contentType) => {
        const team = await teamWithEvents();

        const { response, body } = await rawPost(team, `/api/teams/${team.id}/experiments`, contentType, {
          key: 'legacy',
          event: 'purchase',
          algorithm_type: 'random',
        });

        expectProblem(response, body, 400, 'Bad Request');
        expect(body.errors?.map((e) => e.path)).toContain('/body/algorithm_type');
        expect((await getExperiment(team, 'legacy')).response.status).toBe(404);
      },
    );

    it('when a valid body is sent as application/vnd.api+json, then the experiment is created', async () => {
      const team = await teamWithEvents();

      const { response, body } = await rawPost(team, `/api/teams/${team.id}/experiments`, 'application/vnd.api+json', {
        key: 'from_sdk',
        event: 'purchase',
      });

      expect(response.status).toBe(200);
      expect(body.data?.key).toBe('from_sdk');
    });

    it('when the key is taken, then 409 and the first experiment stays as it was', async () => {
      const team = await teamWithEvents();
      const first = await createExperiment(team, 'taken', 'purchase', 'first');

      const { error, response } = await team.api.POST('/api/teams/{team}/experiments', {
        params: { path: { team: team.id } },
        body: { key: 'taken', event: 'signup', description: 'second' },
      });

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toContain("'taken'");
      expect((await getExperiment(team, 'taken')).data?.data).toEqual(first);
    });

    it('when the key is taken in another team only, then it is created', async () => {
      const team = await teamWithEvents();
      const other = await teamWithEvents();
      await createExperiment(other, 'shared_name');

      const experiment = await createExperiment(team, 'shared_name');

      expect(experiment.key).toBe('shared_name');
    });
  });

  describe('GET /api/teams/{team}/experiments/{experiment}', () => {
    it('when the experiment exists, then it answers as it was created', async () => {
      const team = await teamWithEvents();
      const created = await createExperiment(team, 'exp', 'signup', 'about signups');

      const { data, response } = await getExperiment(team, 'exp');

      expect(response.status).toBe(200);
      expect(data?.data).toEqual(created);
    });

    it('when the experiment does not exist, then 404', async () => {
      const team = await teamWithEvents();

      const { error, response } = await getExperiment(team, 'missing');

      expectProblem(response, error, 404, 'Not Found');
    });

    it("when another team's experiment is asked for, then 404", async () => {
      const team = await teamWithEvents();
      const other = await teamWithEvents();
      await createExperiment(other, 'private');

      const { error, response } = await team.api.GET('/api/teams/{team}/experiments/{experiment}', {
        params: { path: { team: other.id, experiment: 'private' } },
      });

      expectProblem(response, error, 404, 'Not Found');
    });
  });

  describe('GET /api/teams/{team}/experiments', () => {
    it('when the team has none, then the list is empty with one page', async () => {
      const team = await teamWithEvents();

      const { data } = await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } });

      expect(data?.data).toEqual([]);
      expect(data?.meta).toEqual({ current_page: 1, per_page: 15, total: 0, last_page: 1 });
      expect(data?.links.prev).toBeNull();
      expect(data?.links.next).toBeNull();
    });

    it('when there are experiments in every state, then all are listed by key', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'delta');
      await running(team, 'bravo');
      await stopped(team, 'charlie');
      await createExperiment(team, 'alpha');

      const { data } = await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } });

      expect(data?.data.map((e) => [e.key, e.status])).toEqual([
        ['alpha', 'draft'],
        ['bravo', 'running'],
        ['charlie', 'stopped'],
        ['delta', 'draft'],
      ]);
      expect(data?.meta).toEqual({ current_page: 1, per_page: 15, total: 4, last_page: 1 });
    });

    it('when there are more experiments than a page, then pages are ordered by key with meta and links', async () => {
      const team = await teamWithEvents();
      for (const key of ['e', 'c', 'a', 'd', 'b']) await createExperiment(team, key);

      const { data } = await team.api.GET('/api/teams/{team}/experiments', {
        params: { path: { team: team.id }, query: { per_page: 2, page: 2 } },
      });

      expect(data?.data.map((e) => e.key)).toEqual(['c', 'd']);
      expect(data?.meta).toEqual({ current_page: 2, per_page: 2, total: 5, last_page: 3 });
      expect(data?.links).toEqual({
        first: `/api/teams/${team.id}/experiments?per_page=2&page=1`,
        last: `/api/teams/${team.id}/experiments?per_page=2&page=3`,
        prev: `/api/teams/${team.id}/experiments?per_page=2&page=1`,
        next: `/api/teams/${team.id}/experiments?per_page=2&page=3`,
      });
    });

    it('when the page is past the last, then it is empty, not an error', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'only');

      const { data, response } = await team.api.GET('/api/teams/{team}/experiments', {
        params: { path: { team: team.id }, query: { page: 5 } },
      });

      expect(response.status).toBe(200);
      expect(data?.data).toEqual([]);
      expect(data?.meta).toEqual({ current_page: 5, per_page: 15, total: 1, last_page: 1 });
    });

    it('when per_page is above 100, then 400 names /query/per_page', async () => {
      const team = await teamWithEvents();

      const { error, response } = await team.api.GET('/api/teams/{team}/experiments', {
        params: { path: { team: team.id }, query: { per_page: 101 } },
      });

      expectProblem(response, error, 400, 'Bad Request');
      expect(error?.errors?.map((e) => e.path)).toContain('/query/per_page');
    });

    it("when another team's experiments exist, then they are not listed", async () => {
      const team = await teamWithEvents();
      const other = await teamWithEvents();
      await createExperiment(other, 'theirs');
      await createExperiment(team, 'ours');

      const { data } = await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } });

      expect(data?.data.map((e) => e.key)).toEqual(['ours']);
    });
  });

  describe('PUT /api/teams/{team}/experiments/{experiment}', () => {
    async function update(team: TestTeam, experiment: string, body: { key?: string; description?: string | null; event?: string }) {
      return team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment } }, body });
    }

    it('when only the description is given, then only it changes', async () => {
      const team = await teamWithEvents();
      const before = await createExperiment(team, 'exp', 'purchase', 'old words');

      const { data, response } = await update(team, 'exp', { description: 'new words' });

      expect(response.status).toBe(200);
      expect(data?.data).toEqual({ ...before, description: 'new words', updated_at: expect.any(String) });
      expect(Date.parse(data!.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(before.updated_at));
      expect((await getExperiment(team, 'exp')).data?.data).toEqual(data?.data);
    });

    it('when the description is set to null, then it is cleared', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'exp', 'purchase', 'words');

      const { data } = await update(team, 'exp', { description: null });

      expect(data?.data.description).toBeNull();
    });

    it('when the key is renamed, then the seed stays and the old key answers 404', async () => {
      const team = await teamWithEvents();
      const before = await createExperiment(team, 'old_name');

      const { data, response } = await update(team, 'old_name', { key: 'new_name' });

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'new_name', seed: before.seed, event: 'purchase', status: 'draft' });
      expect((await getExperiment(team, 'new_name')).data?.data.seed).toBe(before.seed);
      const old = await getExperiment(team, 'old_name');
      expectProblem(old.response, old.error, 404, 'Not Found');
    });

    it('when a running experiment is renamed, then it keeps running with its seed and variants', async () => {
      const team = await teamWithEvents();
      await running(team, 'live');
      const before = (await getExperiment(team, 'live')).data!.data;

      const { data } = await update(team, 'live', { key: 'live_renamed' });

      expect(data?.data).toMatchObject({ key: 'live_renamed', status: 'running', seed: before.seed, started_at: before.started_at });
      const variants = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants', {
        params: { path: { team: team.id, experiment: 'live_renamed' } },
      });
      expect(variants.data?.data.map((v) => v.key)).toEqual(['control', 'treatment']);
    });

    it('when the goal changes to an existing event, then the experiment is judged by it', async () => {
      const team = await teamWithEvents();
      const before = await createExperiment(team, 'exp', 'purchase');

      const { data, response } = await update(team, 'exp', { event: 'signup' });

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'exp', event: 'signup', seed: before.seed });
      expect((await getExperiment(team, 'exp')).data?.data.event).toBe('signup');
    });

    it('when the new goal does not exist, then 404 and the goal stays', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'exp', 'purchase');

      const { error, response } = await update(team, 'exp', { event: 'nope', description: 'should not stick' });

      expectProblem(response, error, 404, 'Not Found');
      expect((await getExperiment(team, 'exp')).data?.data).toMatchObject({ event: 'purchase', description: null });
    });

    it('when the new key is taken, then 409 and both experiments stay', async () => {
      const team = await teamWithEvents();
      const first = await createExperiment(team, 'first');
      const second = await createExperiment(team, 'second');

      const { error, response } = await update(team, 'second', { key: 'first' });

      expectProblem(response, error, 409, 'Conflict');
      expect((await getExperiment(team, 'first')).data?.data).toEqual(first);
      expect((await getExperiment(team, 'second')).data?.data).toEqual(second);
    });

    it('when the key is "renamed" to itself, then it is accepted', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'same');

      const { data, response } = await update(team, 'same', { key: 'same' });

      expect(response.status).toBe(200);
      expect(data?.data.key).toBe('same');
    });

    it('when status is sent, then 400 names it and the status stays', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'exp');

      const notAField = { status: 'running' }; // not part of the update: a variable skips the excess-property check

      const { error, response } = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', {
        params: { path: { team: team.id, experiment: 'exp' } },
        body: notAField,
      });

      expectProblem(response, error, 400, 'Bad Request');
      expect(error?.errors?.map((e) => e.path)).toContain('/body/status');
      expect((await getExperiment(team, 'exp')).data?.data.status).toBe('draft');
    });

    it('when the experiment does not exist, then 404', async () => {
      const team = await teamWithEvents();

      const { error, response } = await update(team, 'missing', { description: 'x' });

      expectProblem(response, error, 404, 'Not Found');
    });
  });

  describe('DELETE /api/teams/{team}/experiments/{experiment}', () => {
    async function remove(team: TestTeam, experiment: string) {
      return team.api.DELETE('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment } } });
    }

    it('when it is a draft, then it answers with the experiment and it is gone', async () => {
      const team = await teamWithEvents();
      const created = await createExperiment(team, 'doomed', 'purchase', 'bye');

      const { data, response } = await remove(team, 'doomed');

      expect(response.status).toBe(200);
      expect(data?.data).toEqual(created);
      const after = await getExperiment(team, 'doomed');
      expectProblem(after.response, after.error, 404, 'Not Found');
      const list = await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } });
      expect(list.data?.data).toEqual([]);
    });

    it('when it is stopped, then it is deleted with its variants', async () => {
      const team = await teamWithEvents();
      await stopped(team, 'finished');
      const before = (await getExperiment(team, 'finished')).data!.data;

      const { data, response } = await remove(team, 'finished');

      expect(response.status).toBe(200);
      expect(data?.data).toEqual(before);
      expect(data?.data.status).toBe('stopped');
      expect((await getExperiment(team, 'finished')).response.status).toBe(404);
      await createExperiment(team, 'finished');
      const variants = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants', {
        params: { path: { team: team.id, experiment: 'finished' } },
      });
      expect(variants.data?.data).toEqual([]);
    });

    it('when a stopped experiment had participants, then their enrolments go with it', async () => {
      const team = await teamWithEvents();
      await running(team, 'enrolled');
      const ingested = await team.ingest.POST('/api/teams/{team}/ingest', {
        params: { path: { team: team.id } },
        body: { participant: 'user-1', experiment: 'enrolled', variant: 'treatment', event: 'purchase' },
      });
      expect(ingested.response.status).toBe(200);
      expect((await stop(team, 'enrolled')).response.status).toBe(200);

      const { response } = await remove(team, 'enrolled');

      expect(response.status).toBe(200);
      const enrolments = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', {
        params: { path: { team: team.id, participant: 'user-1' } },
      });
      expect(enrolments.data?.data).toEqual([]);
    });

    it('when it is running, then 409 and it is still there, running', async () => {
      const team = await teamWithEvents();
      await running(team, 'busy');

      const { error, response } = await remove(team, 'busy');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/running/);
      expect((await getExperiment(team, 'busy')).data?.data.status).toBe('running');
    });

    it('when it does not exist, then 404', async () => {
      const team = await teamWithEvents();

      const { error, response } = await remove(team, 'missing');

      expectProblem(response, error, 404, 'Not Found');
    });
  });

  describe('POST …/start and …/stop', () => {
    async function expectStillDraft(team: TestTeam, key: string) {
      expect((await getExperiment(team, key)).data?.data).toMatchObject({ status: 'draft', started_at: null });
    }

    it('when it has no variants, then start is 409 saying at least 2 are needed', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'empty');

      const { error, response } = await start(team, 'empty');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/0 variant/);
      expect(error?.detail).toMatch(/at least 2/);
      await expectStillDraft(team, 'empty');
    });

    it('when it has one variant, then start is 409 saying at least 2 are needed', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'lonely');
      await addVariant(team, 'lonely', 'control', { control: true });

      const { error, response } = await start(team, 'lonely');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/1 variant/);
      expect(error?.detail).toMatch(/at least 2/);
      await expectStillDraft(team, 'lonely');
    });

    it('when no variant is the control, then start is 409 saying a control is needed', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'headless');
      await addVariant(team, 'headless', 'a');
      await addVariant(team, 'headless', 'b');

      const { error, response } = await start(team, 'headless');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/control/);
      await expectStillDraft(team, 'headless');
    });

    it('when the shares sum below 100, then start is 409 saying what they sum to', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'thin');
      await addVariant(team, 'thin', 'control', { control: true, traffic: 30 });
      await addVariant(team, 'thin', 'treatment', { traffic: 40 });

      const { error, response } = await start(team, 'thin');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/70/);
      expect(error?.detail).toMatch(/100/);
      await expectStillDraft(team, 'thin');
    });

    it('when the variants are valid, then start sets running and started_at', async () => {
      const team = await teamWithEvents();
      await startable(team, 'go');
      const before = (await getExperiment(team, 'go')).data!.data;

      const { data, response } = await start(team, 'go');

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'go', status: 'running', seed: before.seed, stopped_at: null });
      expect(Date.parse(data!.data.started_at!)).toBeGreaterThanOrEqual(Date.parse(before.created_at));
      expect((await getExperiment(team, 'go')).data?.data).toEqual(data?.data);
    });

    it('when set and automatic shares resolve to 100, then start succeeds', async () => {
      const team = await teamWithEvents();
      await createExperiment(team, 'mixed');
      await addVariant(team, 'mixed', 'control', { control: true, traffic: 20 });
      await addVariant(team, 'mixed', 'b');
      await addVariant(team, 'mixed', 'c');

      const { data, response } = await start(team, 'mixed');

      expect(response.status).toBe(200);
      expect(data?.data.status).toBe('running');
    });

    it('when it is started twice at once, then exactly one start wins', async () => {
      const team = await teamWithEvents();
      await startable(team, 'race');

      const answers = await Promise.all([start(team, 'race'), start(team, 'race'), start(team, 'race')]);

      expect(answers.map((a) => a.response.status).sort()).toEqual([200, 409, 409]);
      const winner = answers.find((a) => a.response.status === 200)!.data!.data;
      expect((await getExperiment(team, 'race')).data?.data).toEqual(winner);
    });

    it('when it is already running, then start is 409 and started_at stays', async () => {
      const team = await teamWithEvents();
      await running(team, 'twice');
      const before = (await getExperiment(team, 'twice')).data!.data;

      const { error, response } = await start(team, 'twice');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/running/);
      expect((await getExperiment(team, 'twice')).data?.data).toEqual(before);
    });

    it('when it is running, then stop sets stopped and stopped_at', async () => {
      const team = await teamWithEvents();
      await running(team, 'halt');
      const before = (await getExperiment(team, 'halt')).data!.data;

      const { data, response } = await stop(team, 'halt');

      expect(response.status).toBe(200);
      expect(data?.data).toMatchObject({ key: 'halt', status: 'stopped', started_at: before.started_at });
      expect(Date.parse(data!.data.stopped_at!)).toBeGreaterThanOrEqual(Date.parse(before.started_at!));
      expect((await getExperiment(team, 'halt')).data?.data).toEqual(data?.data);
    });

    it('when it is a draft, then stop is 409 and it stays a draft', async () => {
      const team = await teamWithEvents();
      await startable(team, 'early');

      const { error, response } = await stop(team, 'early');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/draft/);
      expect((await getExperiment(team, 'early')).data?.data).toMatchObject({ status: 'draft', stopped_at: null });
    });

    it('when it is already stopped, then stop is 409 and stopped_at stays', async () => {
      const team = await teamWithEvents();
      await stopped(team, 'done');
      const before = (await getExperiment(team, 'done')).data!.data;

      const { error, response } = await stop(team, 'done');

      expectProblem(response, error, 409, 'Conflict');
      expect((await getExperiment(team, 'done')).data?.data).toEqual(before);
    });

    it('when it is stopped, then start is 409: stopped is final', async () => {
      const team = await teamWithEvents();
      await stopped(team, 'final');
      const before = (await getExperiment(team, 'final')).data!.data;

      const { error, response } = await start(team, 'final');

      expectProblem(response, error, 409, 'Conflict');
      expect(error?.detail).toMatch(/stopped/);
      expect((await getExperiment(team, 'final')).data?.data).toEqual(before);
    });

    it('when the experiment does not exist, then start and stop are 404', async () => {
      const team = await teamWithEvents();

      const started = await start(team, 'missing');
      const halted = await stop(team, 'missing');

      expectProblem(started.response, started.error, 404, 'Not Found');
      expectProblem(halted.response, halted.error, 404, 'Not Found');
    });
  });
});
