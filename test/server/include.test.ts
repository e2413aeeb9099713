import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment } from '../support/fixtures';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

/**
 * `include` as the service's existing JavaScript client sends it: `include=variants` embeds
 * variants in experiments, an empty `include=` means nothing, and where nothing can be embedded
 * a value is a 400 that names the parameter.
 */
describe.each(engines)('the include query parameter on %s', (engine) => {
  const server = useServer(engine);

  async function get(team: TestTeam, path: string) {
    const response = await fetch(`${server().baseUrl}${path.replace('{team}', String(team.id))}`, { headers: { Authorization: `Bearer ${team.token}` } });
    return { response, body: (await response.json()) as { data: any; errors?: Array<{ path: string; message: string }> } };
  }

  describe('GET /api/teams/{team}/experiments(/{experiment})', () => {
    it('when include=variants is asked, then the experiment carries its variants in creation order', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'checkout');

      const { response, body } = await get(team, '/api/teams/{team}/experiments/checkout?include=variants');

      expect(response.status).toBe(200);
      expect(body.data.variants.map((v: { key: string; control: boolean }) => [v.key, v.control])).toEqual([
        ['control', true],
        ['treatment', false],
      ]);
    });

    it('when include=variants is asked of the list, then every experiment carries its own variants', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'one');
      await createExperiment(team, 'two', { start: false });
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team: team.id, experiment: 'two' } }, body: { key: 'third' } });

      const { data, response } = await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id }, query: { include: ['variants'] } } });

      expect(response.status).toBe(200);
      expect(data!.data.map((e) => [e.key, e.variants?.map((v) => v.key)])).toEqual([
        ['one', ['control', 'treatment']],
        ['two', ['control', 'treatment', 'third']],
      ]);
    });

    it('when include is not asked, then no experiment carries variants', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'plain');

      const one = await get(team, '/api/teams/{team}/experiments/plain');
      const list = await get(team, '/api/teams/{team}/experiments');

      expect(one.body.data).not.toHaveProperty('variants');
      expect(list.body.data[0]).not.toHaveProperty('variants');
    });

    it('when include names something else, then 400 names /query/include and the value it allows', async () => {
      const team = await server().newTeam();
      await createExperiment(team, 'strict');

      const { response, body } = await get(team, '/api/teams/{team}/experiments/strict?include=events');

      expectProblem(response, body, 400, 'Bad Request', ['/query/include/0']);
      expect(body.errors!.find((e) => e.path === '/query/include/0')!.message).toContain('variants');
    });
  });

  describe('an empty include=', () => {
    const paths = [
      '/api/teams',
      '/api/teams/{team}',
      '/api/teams/{team}/events',
      '/api/teams/{team}/events/goal',
      '/api/teams/{team}/experiments',
      '/api/teams/{team}/experiments/empty',
      '/api/teams/{team}/experiments/empty/variants',
      '/api/teams/{team}/experiments/empty/variants/control',
      '/api/teams/{team}/participants',
      '/api/teams/{team}/participants/user-1',
    ];

    it.each(paths)('when %s is asked with include=, then it answers 200 as without include', async (path) => {
      const team = await server().newTeam();
      await createExperiment(team, 'empty');
      await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: 'user-1' } });

      const plain = await get(team, path);
      const empty = await get(team, `${path}?include=`);

      expect(plain.response.status).toBe(200);
      expect(empty.response.status).toBe(200);
      expect(empty.body).toEqual(plain.body);
    });

    it('when it stands among other parameters, then they still apply', async () => {
      const team = await server().newTeam();
      for (const key of ['a', 'b', 'c']) await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key } });

      const { response, body } = await get(team, '/api/teams/{team}/events?per_page=2&include=&page=2');

      expect(response.status).toBe(200);
      expect(body.data.map((e: { key: string }) => e.key)).toEqual(['c']);
    });

    it('when another parameter is empty, then it is still a 400 naming it', async () => {
      const team = await server().newTeam();

      const { response, body } = await get(team, '/api/teams/{team}/events?include=&page=');

      expectProblem(response, body, 400, 'Bad Request', ['/query/page']);
    });
  });

  describe('where nothing can be embedded', () => {
    const paths = [
      '/api/teams/{team}/events',
      '/api/teams/{team}/events/goal',
      '/api/teams/{team}/experiments/solo/variants',
      '/api/teams/{team}/experiments/solo/variants/control',
      '/api/teams/{team}/participants',
      '/api/teams/{team}/participants/user-1',
    ];

    it.each(paths)('when %s is asked with include=experiments, then 400 names /query/include', async (path) => {
      const team = await server().newTeam();
      await createExperiment(team, 'solo');
      await team.ingest.POST('/api/teams/{team}/ingest', { params: { path: { team: team.id } }, body: { participant: 'user-1' } });

      const { response, body } = await get(team, `${path}?include=experiments`);

      expectProblem(response, body, 400, 'Bad Request', ['/query/include']);
    });
  });
});
