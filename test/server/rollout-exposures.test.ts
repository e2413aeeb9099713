import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { rolloutArm } from '../../domain/rollout-arms';
import { engines } from '../support/engines';
import { useServer } from '../support/server';

type IngestRequest = components['schemas']['IngestRequest'];

const STEPS = [
  { percentage: 50, hold_seconds: 3600, minimum_exposures: 0 },
  { percentage: 100, hold_seconds: 0, minimum_exposures: 0 },
];

describe.each(engines)("safe rollouts' exposures and guardrail counts through the ingest on %s", (engine) => {
  const server = useServer(engine);

  async function arrange() {
    const team = await server().newTeam();
    const path = { team: team.id };
    for (const event of [{ key: 'checkout_error', type: 'unique' as const }, { key: 'spend', type: 'value' as const }]) {
      expect((await team.api.POST('/api/teams/{team}/events', { params: { path }, body: event })).response.status).toBe(200);
    }
    await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'pricing', event: 'spend' } });
    for (const key of ['control', 'treatment']) await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'pricing' } }, body: { key, control: key === 'control' } });
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'pricing' } } });
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'checkout', type: 'boolean', enabled: true, value: 'false' } });
    const created = await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', {
      params: { path: { ...path, feature: 'checkout' } },
      body: { value: 'true', guardrails: [{ event: 'checkout_error', direction: 'decrease' }, { event: 'spend', direction: 'increase' }], steps: STEPS },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const rollout = created.data!.data;
    const armOf = (participant: string) => rolloutArm(rollout.seed, participant, 50)!;
    const ingest = (body: IngestRequest) => team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body });
    const get = async () => (await team.api.GET('/api/teams/{team}/features/{feature}/rollouts/{rollout}', { params: { path: { ...path, feature: 'checkout', rollout: '1' } } })).data!.data;
    return { team, path, armOf, ingest, get };
  }

  it('when participants are exposed and report guardrail events, then each counts once in the arm of its first exposure, from its exposure on, and enrols in no experiment', async () => {
    const { team, path, armOf, ingest, get } = await arrange();
    const participants = Array.from({ length: 40 }, (_, n) => `visitor-${n}`);
    // An error before the exposure is not the rollout's to count.
    expect((await ingest({ participant: 'visitor-0', event: 'checkout_error', enrol: false })).response.status).toBe(200);
    for (const participant of participants) {
      const exposed = await ingest({ participant, rollout: { feature: 'checkout', number: 1, arm: armOf(participant) } });
      expect(exposed.response.status, JSON.stringify(exposed.error)).toBe(200);
      expect(exposed.data!.data.assignments).toEqual([]);
    }
    // Exposed again, whatever the arm named: nothing changes (one arm is refused as not the participant's: below).
    await ingest({ participant: 'visitor-1', rollout: { feature: 'checkout', number: 1, arm: armOf('visitor-1') } });
    const errors = participants.filter((_, n) => n % 4 === 0);
    for (const participant of errors) await ingest({ participant, event: 'checkout_error', enrol: false });
    await ingest({ participant: 'visitor-4', event: 'checkout_error', enrol: false });
    const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', {
      params: { path },
      body: { items: [{ participant: 'visitor-2', event: 'spend', value: 12.5, enrol: false }, { participant: 'visitor-2', event: 'spend', value: 2.5, enrol: false }, { participant: 'visitor-3', event: 'spend', value: 9, experiment: 'pricing' }] },
    });
    expect(batch.data!.data.map((item) => item.status)).toEqual([200, 200, 200]);

    const rollout = await get();
    const inArm = (arm: string) => participants.filter((participant) => armOf(participant) === arm);
    expect(rollout.exposures).toEqual({ new: inArm('new').length, current: inArm('current').length });
    const [error, spend] = rollout.readings;
    for (const arm of ['new', 'current'] as const) {
      const converted = errors.filter((participant) => armOf(participant) === arm).length;
      expect(error![arm]).toEqual({ participants: inArm(arm).length, mean: converted / inArm(arm).length });
      // visitor-3's spend named an experiment: it counts only there.
      expect(spend![arm].mean).toBeCloseTo(armOf('visitor-2') === arm ? 15 / inArm(arm).length : 0, 9);
    }
    expect(error).toMatchObject({ event: 'checkout_error', metric: 'rate', adjusted_p_value: 1, harmed: false });
    expect(spend).toMatchObject({ event: 'spend', metric: 'mean', p_value: expect.any(Number) });
  });

  it('when an exposure names an arm the hash does not give, an unknown flag or rollout, or a rollout no longer running, then it is a 409 or 404 naming it and nothing is stored', async () => {
    const { team, path, armOf, ingest, get } = await arrange();
    const other = armOf('visitor-x') === 'new' ? 'current' : 'new';
    const wrong = await ingest({ participant: 'visitor-x', rollout: { feature: 'checkout', number: 1, arm: other } });
    expect(wrong.response.status).toBe(409);
    expect(wrong.error!.detail).toContain('/body/rollout/arm');
    for (const rollout of [{ feature: 'nope', number: 1 }, { feature: 'checkout', number: 2 }]) {
      const missing = await ingest({ participant: 'visitor-x', rollout: { ...rollout, arm: 'new' } });
      expect(missing.response.status).toBe(404);
      expect(missing.error!.detail).toContain('/body/rollout');
    }
    expect((await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'visitor-x' } } })).response.status).toBe(404);
    expect((await get()).exposures).toEqual({ new: 0, current: 0 });
    await team.api.POST('/api/teams/{team}/features/{feature}/rollouts/{rollout}/roll-back', { params: { path: { ...path, feature: 'checkout', rollout: '1' } } });
    const ended = await ingest({ participant: 'visitor-y', rollout: { feature: 'checkout', number: 1, arm: armOf('visitor-y') } });
    expect(ended.response.status).toBe(409);
    expect(ended.error!.detail).toContain('rolled_back');
  });

  it("when an exposed participant is deleted, then its exposure and guardrail conversions go with it and the arms' counters keep what was observed", async () => {
    const { team, path, armOf, ingest, get } = await arrange();
    await ingest({ participant: 'visitor-z', rollout: { feature: 'checkout', number: 1, arm: armOf('visitor-z') } });
    await ingest({ participant: 'visitor-z', event: 'checkout_error', enrol: false });
    const deleted = await team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: 'visitor-z' } } });
    expect(deleted.response.status, JSON.stringify(deleted.error)).toBe(200);
    const rollout = await get();
    expect(rollout.exposures[armOf('visitor-z')]).toBe(1);
    expect(rollout.readings[0]![armOf('visitor-z')]).toEqual({ participants: 1, mean: 1 });
    // Exposed again as a new participant: a first exposure once more.
    expect((await ingest({ participant: 'visitor-z', rollout: { feature: 'checkout', number: 1, arm: armOf('visitor-z') } })).response.status).toBe(200);
    expect((await get()).exposures[armOf('visitor-z')]).toBe(2);
  });
});
