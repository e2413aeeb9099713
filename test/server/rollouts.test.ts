import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { createClient } from 'experimentation-api/sdk';
import { evaluateConfig } from '../../domain/evaluation';
import { rolloutArm } from '../../domain/rollout-arms';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

type RolloutCreate = components['schemas']['RolloutCreate'];
type Rollout = components['schemas']['Rollout'];

const FAST = [
  { percentage: 50, hold_seconds: 0, minimum_exposures: 0 },
  { percentage: 100, hold_seconds: 0, minimum_exposures: 0 },
];
const PARTICIPANTS = Array.from({ length: 300 }, (_, n) => `visitor-${n}`);

describe.each(engines)('safe rollouts on %s', (engine) => {
  const server = useServer(engine);
  let flags = 0;

  async function arrange(team?: TestTeam, flag: Partial<components['schemas']['FeatureCreate']> = {}) {
    team ??= await server().newTeam();
    const key = `checkout_${++flags}`;
    const created = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key, type: 'boolean', enabled: true, value: 'false', ...flag } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const path = { team: team.id, feature: key };
    const create = (body: RolloutCreate) => team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path }, body });
    const act = (number: number, action: 'pause' | 'resume' | 'roll-back' | 'release') =>
      team.api.POST(`/api/teams/{team}/features/{feature}/rollouts/{rollout}/${action}`, { params: { path: { ...path, rollout: String(number) } } });
    const get = (number: string) => team.api.GET('/api/teams/{team}/features/{feature}/rollouts/{rollout}', { params: { path: { ...path, rollout: number } } });
    const evaluate = async (participant: string, attributes = {}) =>
      (await team.ingest.POST('/api/teams/{team}/evaluate', { params: { path: { team: team.id } }, body: { participant, attributes } })).data!.data.features[key]!;
    return { team, key, path, create, act, get, evaluate };
  }

  it('when a rollout is created with the defaults, then it runs at 1 % of the default ramp with a fixed seed, and reads back the same by number and in the list', async () => {
    const { team, path, create, get } = await arrange();
    const created = await create({ value: 'true' });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const rollout = created.data!.data;
    expect(rollout).toMatchObject({ number: 1, feature: path.feature, state: 'running', value: 'true', conditions: {}, guardrails: [], significance: 0.05, step: 0, share: 1, rollback: null });
    expect(rollout.steps.map((step) => step.percentage)).toEqual([1, 5, 10, 25, 50, 100]);
    expect(rollout.steps.every((step) => step.hold_seconds === 3600 && step.minimum_exposures === 2000)).toBe(true);
    expect(rollout.seed).toMatch(/^[0-9a-f]{32}$/);
    expect(rollout.history).toEqual([{ step: 0, percentage: 1, at: rollout.created_at }]);
    expect((await get('1')).data!.data).toEqual(rollout);
    expect((await team.api.GET('/api/teams/{team}/features/{feature}/rollouts', { params: { path } })).data!.data).toEqual([rollout]);
    const config = (await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } })).data!.data;
    expect(config.features.find((flag) => flag.key === path.feature)!.rollout).toEqual({ number: 1, seed: rollout.seed, share: 1, value: 'true' });
  });

  it('when a rollout is invalid, then it is a 400 or 404 naming the field, a second one while it runs is 409, and nothing is stored', async () => {
    const { team, create, get } = await arrange();
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'checkout_error' } });
    const cases: Array<[RolloutCreate, number, string]> = [
      [{ value: 'maybe' }, 400, '/body/value'],
      [{ value: 'true', steps: [{ percentage: 10, hold_seconds: 0, minimum_exposures: 0 }, { percentage: 90, hold_seconds: 0, minimum_exposures: 0 }] }, 400, '/body/steps/1/percentage'],
      [{ value: 'true', steps: [{ percentage: 60, hold_seconds: 0, minimum_exposures: 0 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] }, 400, '/body/steps/0/percentage'],
      [{ value: 'true', guardrails: [{ event: 'checkout_error', direction: 'decrease' }, { event: 'checkout_error', direction: 'increase' }] }, 400, '/body/guardrails/1/event'],
      [{ value: 'true', conditions: { $and: 'NL' } as never }, 400, '/body/conditions'],
    ];
    for (const [body, status, field] of cases) {
      const { response, error } = await create(body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect((error as { errors: Array<{ path: string }> }).errors.map((e) => e.path).join(), JSON.stringify(body)).toContain(field);
    }
    const unknownEvent = await create({ value: 'true', guardrails: [{ event: 'checkout_error', direction: 'decrease' }, { event: 'refund', direction: 'decrease' }] });
    expect(unknownEvent.response.status).toBe(404);
    expect((unknownEvent.error as { detail: string }).detail).toContain('/body/guardrails/1/event');
    expect((await get('1')).response.status).toBe(404);
    const noFlag = await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { team: team.id, feature: 'absent' } }, body: { value: 'true' } });
    expect(noFlag.response.status).toBe(404);

    expect((await create({ value: 'true', guardrails: [{ event: 'checkout_error', direction: 'decrease' }] })).response.status).toBe(200);
    const second = await create({ value: 'true' });
    expect(second.response.status).toBe(409);
    expect((second.error as { detail: string }).detail).toContain('already has rollout 1, which is running');
    expect((await get('2')).response.status).toBe(404);
    expect((await get('01')).response.status).toBe(400);
  });

  it('when a rollout is paused, resumed, rolled back and another released, then each action holds only in its states, is audited as rollout <feature>/<number> and queued as its webhook event type', async () => {
    const { team, key, path, create, act } = await arrange();
    const hook = await team.api.POST('/api/teams/{team}/webhooks', { params: { path: { team: team.id } }, body: { key: 'rollouts', url: 'https://203.0.113.7/hooks', event_types: ['rollout.*'] } });
    expect(hook.response.status).toBe(200);
    expect((await create({ value: 'true', steps: FAST })).response.status).toBe(200);
    const paused = (await act(1, 'pause')).data!.data;
    expect(paused).toMatchObject({ state: 'paused', step: 0, share: 50 });
    expect((await act(1, 'pause')).response.status).toBe(409);
    expect((await act(1, 'resume')).data!.data.state).toBe('running');
    expect((await act(1, 'resume')).response.status).toBe(409);
    const rolledBack = (await act(1, 'roll-back')).data!.data;
    expect(rolledBack.state).toBe('rolled_back');
    expect(rolledBack.rollback).toEqual({ reason: 'manual', at: rolledBack.updated_at, event: null, effect: null, interval: null });
    for (const action of ['pause', 'resume', 'roll-back', 'release'] as const) expect((await act(1, action)).response.status, action).toBe(409);
    expect((await act(3, 'pause')).response.status).toBe(404);

    expect((await create({ value: 'true', steps: FAST })).data!.data.number).toBe(2);
    const released = (await act(2, 'release')).data!.data;
    expect(released).toMatchObject({ state: 'released', step: 1, share: 100, rollback: null });
    expect(released.history.map((entry) => entry.percentage)).toEqual([50, 100]);
    expect((await act(2, 'roll-back')).response.status).toBe(409);
    const flag = (await team.api.GET('/api/teams/{team}/features/{feature}', { params: { path } })).data!.data;
    expect(flag.value).toBe('true');

    const log = (await team.api.GET('/api/teams/{team}/audit-log', { params: { path: { team: team.id }, query: { limit: 100 } } })).data!.data;
    const rollouts = log.filter((entry) => entry.resource_type === 'rollout').map((entry) => `${entry.resource_key} ${entry.action}`);
    expect(rollouts).toEqual([`${key}/2 released`, `${key}/2 created`, `${key}/1 rolled_back`, `${key}/1 resumed`, `${key}/1 paused`, `${key}/1 created`]);
    const flagUpdate = log.find((entry) => entry.resource_type === 'flag' && entry.action === 'updated')!;
    expect(flagUpdate).toMatchObject({ resource_key: key, before: { value: 'false' }, after: { value: 'true' } });
    const deliveries = (await team.api.GET('/api/teams/{team}/webhooks/{webhook}/deliveries', { params: { path: { team: team.id, webhook: 'rollouts' }, query: { limit: 100 } } })).data!.data;
    expect(deliveries.map((delivery) => delivery.event_type).sort()).toEqual(['rollout.created', 'rollout.created', 'rollout.paused', 'rollout.released', 'rollout.resumed', 'rollout.rolled_back']);
  });

  it('when a rollout runs at 50 %, then /evaluate, OFREP and the SDK serve the new value to its new arm (about half) and the current value to the rest, force rules and conditions still decide first; rollback serves everyone the current value; release changes the flag', async () => {
    const rules = [{ type: 'force' as const, conditions: { country: 'DE' }, value: 'false' }];
    const { team, key, create, act, evaluate } = await arrange(undefined, { rules });
    const rollout = (await create({ value: 'true', steps: FAST, conditions: { plan: { $ne: 'free' } } })).data!.data;
    const client = createClient({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
    try {
      await client.ready();
      let served = 0;
      for (const participant of PARTICIPANTS) {
        const arm = rolloutArm(rollout.seed, participant, 50)!;
        const evaluation = await evaluate(participant);
        expect(evaluation, participant).toEqual({ value: arm === 'new' ? 'true' : 'false', reason: 'rollout', rule: null, rollout_arm: arm });
        expect(client.feature(key, participant), participant).toBe(arm === 'new');
        if (arm === 'new') served++;
      }
      // About half: the random seed splits 300 participants, so 30–70 % is ±7 σ (40–60 % failed about 1 seed in 1 500).
      expect(served).toBeGreaterThan(PARTICIPANTS.length * 0.3);
      expect(served).toBeLessThan(PARTICIPANTS.length * 0.7);
      const inNew = PARTICIPANTS.find((participant) => rolloutArm(rollout.seed, participant, 50) === 'new')!;
      expect(await evaluate(inNew, { country: 'DE' })).toEqual({ value: 'false', reason: 'rule', rule: 0 });
      expect(await evaluate(inNew, { plan: 'free' })).toEqual({ value: 'false', reason: 'default', rule: null });
      const ofrep = async (participant: string) =>
        (await fetch(`${server().baseUrl}/api/teams/${team.id}/ofrep/v1/evaluate/flags/${key}`, { method: 'POST', headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ context: { targetingKey: participant } }) })).json();
      expect(await ofrep(inNew)).toMatchObject({ key, value: true, reason: 'SPLIT', variant: 'rollout_new' });
      const inCurrent = PARTICIPANTS.find((participant) => rolloutArm(rollout.seed, participant, 50) === 'current')!;
      expect(await ofrep(inCurrent)).toMatchObject({ key, value: false, reason: 'SPLIT', variant: 'rollout_current' });

      expect((await act(1, 'roll-back')).response.status).toBe(200);
      for (const participant of PARTICIPANTS.slice(0, 50)) expect(await evaluate(participant)).toEqual({ value: 'false', reason: 'default', rule: null });
      await expect.poll(() => client.feature(key, inNew), { timeout: 10_000 }).toBe(false);
      expect(PARTICIPANTS.every((participant) => (client.feature(key, participant) as unknown) === false)).toBe(true);

      expect((await create({ value: 'true', steps: FAST })).response.status).toBe(200);
      expect((await act(2, 'release')).response.status).toBe(200);
      for (const participant of PARTICIPANTS.slice(0, 50)) expect(await evaluate(participant)).toEqual({ value: 'true', reason: 'default', rule: null });
      await expect.poll(() => PARTICIPANTS.every((participant) => (client.feature(key, participant) as unknown) === true), { timeout: 10_000 }).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('when a rollout is paused, then it keeps serving its arms at its share', async () => {
    const { create, act, evaluate } = await arrange();
    const rollout = (await create({ value: 'true', steps: FAST })).data!.data;
    await act(1, 'pause');
    for (const participant of PARTICIPANTS.slice(0, 40)) expect((await evaluate(participant)).value).toBe(rolloutArm(rollout.seed, participant, 50) === 'new' ? 'true' : 'false');
  });
});

describe('the shared evaluator with a rollout whose share rises', () => {
  it('when the share rises from 5 to 50 %, then everyone served the new value keeps it, and the new arm grows', () => {
    const flag = (share: number) => ({ team: 1, experiments: [], features: [{ key: 'checkout', type: 'string' as const, enabled: true, value: 'old', rules: [], rollout: { number: 1, seed: '0123456789abcdef0123456789abcdef', share, value: 'new' } }] });
    const servedNew = (share: number) => new Set(PARTICIPANTS.filter((key) => evaluateConfig(flag(share), { key }).features.checkout!.value === 'new'));
    const [five, ten, fifty] = [servedNew(5), servedNew(10), servedNew(50)];
    for (const participant of five) expect(ten.has(participant)).toBe(true);
    for (const participant of ten) expect(fifty.has(participant)).toBe(true);
    expect(five.size).toBeLessThan(ten.size);
    expect(ten.size).toBeLessThan(fifty.size);
    expect(evaluateConfig(flag(100), { key: 'anyone' }).features.checkout).toEqual({ value: 'new', reason: 'rollout', rule: null, rollout_arm: 'new' });
  });
});

export type { Rollout };
