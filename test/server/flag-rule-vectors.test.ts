import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { flagRuleVectors } from '../support/flag-rule-vectors';
import type { TestTeam } from '../support/team';

type Config = components['schemas']['Config'];

describe.each(engines)('flag-rule vectors through the server on %s', (engine) => {
  const server = useServer(engine);

  /** The vector's config in a new team: its experiments (running, with the vector's seeds) and its flags. */
  async function teamWith(config: Config): Promise<TestTeam> {
    const team = await server().newTeam();
    const path = { team: team.id };
    for (const experiment of config.experiments) {
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: experiment.event } });
      const { key, event, conditions, coverage, exclusion_group } = experiment;
      const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key, event, conditions, coverage, ...(exclusion_group ? { exclusion_group } : {}) } });
      expect(created.response.status, JSON.stringify(created.error)).toBe(200);
      for (const variant of experiment.variants) {
        const body = { key: variant.key, control: variant.control, traffic: variant.traffic };
        await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: experiment.key } }, body });
      }
      // Seeds are drawn at random on create; the vector fixes them, so the arrangement writes them, before start.
      await server().storage.db.updateTable('experiments').set({ seed: experiment.seed }).where('team_id', '=', team.id).where('key', '=', experiment.key).execute();
      const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: experiment.key } } });
      expect(started.response.status).toBe(200);
    }
    // A rule may name an experiment the config does not hold (one that is not running): a draft here.
    const running = new Set(config.experiments.map((experiment) => experiment.key));
    for (const rule of config.features.flatMap((flag) => flag.rules)) {
      if (rule.type !== 'experiment' || running.has(rule.experiment)) continue;
      running.add(rule.experiment);
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } });
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: rule.experiment, event: 'goal' } });
      for (const key of Object.keys(rule.variants)) {
        await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: rule.experiment } }, body: { key } });
      }
    }
    for (const flag of config.features) {
      const created = await team.api.POST('/api/teams/{team}/features', { params: { path }, body: flag });
      expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    }
    const { data } = await team.ingest.GET('/api/teams/{team}/config', { params: { path } });
    expect(data?.data).toEqual({ ...config, team: team.id });
    return team;
  }

  it.each(flagRuleVectors.map((vector) => [vector.name, vector] as const))('%s: POST …/evaluate answers every participant as expected', async (_name, vector) => {
    const team = await teamWith(vector.config);
    for (const participant of vector.participants) {
      const { data, error } = await team.ingest.POST('/api/teams/{team}/evaluate', {
        params: { path: { team: team.id } },
        body: { participant: participant.key, attributes: participant.attributes },
      });
      expect(data?.data, `${participant.key} ${JSON.stringify(error)}`).toEqual(participant.expected);
    }
  });
});
