import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { rolloutArm } from '../../domain/rollout-arms';
import { checkRollouts } from '../../server/rollouts/watcher';
import { openStorageAt } from '../support/storage';
import { engines } from '../support/engines';
import { useServer } from '../support/server';

type RolloutCreate = components['schemas']['RolloutCreate'];
type IngestBatchItem = components['schemas']['IngestRequest'];

const HOUR = 3_600_000;

describe.each(engines)('the safe rollouts check on %s: advance, hold, roll back and release, decided by the service', (engine) => {
  const server = useServer(engine);

  async function arrange(body: Omit<RolloutCreate, 'value'>) {
    const team = await server().newTeam();
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'checkout_error', type: 'unique' } });
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'checkout', type: 'boolean', enabled: true, value: 'false' } });
    await team.api.POST('/api/teams/{team}/webhooks', { params: { path }, body: { key: 'rollouts', url: 'https://203.0.113.7/hooks', event_types: ['rollout.*'] } });
    const created = await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: 'checkout' } }, body: { value: 'true', guardrails: [{ event: 'checkout_error', direction: 'decrease' }], ...body } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const seed = created.data!.data.seed;
    const get = async () => (await team.api.GET('/api/teams/{team}/features/{feature}/rollouts/{rollout}', { params: { path: { ...path, feature: 'checkout', rollout: '1' } } })).data!.data;
    /** Participants `from`… exposed at `share` until each arm has `perArm` more, with an error at the rates given per arm. */
    let next = 0;
    async function expose(share: number, perArm: number, errorRate: { new: number; current: number } = { new: 0, current: 0 }, only?: 'new' | 'current') {
      const counts = { new: 0, current: 0 };
      const items: IngestBatchItem[] = [];
      while (only ? counts[only] < perArm : counts.new < perArm || counts.current < perArm) {
        const participant = `visitor-${next++}`;
        const arm = rolloutArm(seed, participant, share);
        if (!arm || counts[arm] >= perArm || (only && arm !== only)) continue;
        counts[arm]++;
        items.push({ participant, rollout: { feature: 'checkout', number: 1, arm } });
        // Errors drawn evenly, not at random: the test decides what the arms show.
        if (Math.floor(counts[arm] * errorRate[arm]) > Math.floor((counts[arm] - 1) * errorRate[arm])) items.push({ participant, event: 'checkout_error', enrol: false });
      }
      for (let i = 0; i < items.length; i += 500) {
        const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items: items.slice(i, i + 500) } });
        expect(batch.data!.data.every((item) => item.status === 200), JSON.stringify(batch.error ?? batch.data!.data.find((item) => item.status !== 200))).toBe(true);
      }
    }
    const audit = async () => (await team.api.GET('/api/teams/{team}/audit-log', { params: { path, query: { resource_type: 'rollout', limit: 100 } } })).data!.data;
    const deliveries = async () => (await team.api.GET('/api/teams/{team}/webhooks/{webhook}/deliveries', { params: { path: { ...path, webhook: 'rollouts' }, query: { limit: 100 } } })).data!.data.map((d) => d.event_type).sort();
    const served = async () => (await team.ingest.GET('/api/teams/{team}/config', { params: { path } })).data!.data.features.find((flag) => flag.key === 'checkout')!;
    return { team, get, expose, audit, deliveries, served };
  }

  const check = (at = Date.now()) => checkRollouts(server().storage, at);

  it('when a step is held long enough with enough exposures per arm and no guardrail harmed, then it advances, and after the last compared step it releases: the flag serves the new value, each audited by the service and announced', async () => {
    const { get, expose, audit, deliveries, served } = await arrange({ steps: [{ percentage: 10, hold_seconds: 3600, minimum_exposures: 20 }, { percentage: 50, hold_seconds: 0, minimum_exposures: 20 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] });
    await expose(10, 25);
    await check();
    expect((await get()).step).toBe(0); // held for less than an hour
    await check(Date.now() + HOUR + 1000);
    const advanced = await get();
    expect(advanced).toMatchObject({ state: 'running', step: 1, share: 50, hold: null });
    expect(advanced.history.map((h) => h.percentage)).toEqual([10, 50]);
    expect((await served()).rollout).toMatchObject({ share: 50 });
    await check();
    expect((await get()).step).toBe(1); // no exposures since the step began
    await expose(50, 25);
    await check();
    const done = await get();
    expect(done).toMatchObject({ state: 'released', step: 2, share: 100 });
    expect(done.history.map((h) => h.percentage)).toEqual([10, 50, 100]);
    expect(await served()).toMatchObject({ value: 'true' });
    expect((await served()).rollout ?? null).toBeNull();
    const entries = await audit();
    expect(entries.filter((e) => e.actor.type === 'service').map((e) => e.action).reverse()).toEqual(['advanced', 'released']);
    expect(await deliveries()).toEqual(['rollout.advanced', 'rollout.created', 'rollout.released']);
  });

  it('when the new arm makes a guardrail significantly worse, then the check rolls it back, naming the guardrail, its effect and interval, and every participant is served the current value', async () => {
    const { get, expose, audit, deliveries, served } = await arrange({ steps: [{ percentage: 50, hold_seconds: 3600, minimum_exposures: 0 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] });
    await expose(50, 300, { new: 0.5, current: 0.05 });
    expect(await check()).not.toEqual([]);
    const rolled = await get();
    expect(rolled.state).toBe('rolled_back');
    expect(rolled.rollback).toMatchObject({ reason: 'guardrail', event: 'checkout_error' });
    expect(rolled.rollback!.effect).toBeCloseTo(0.45, 2);
    expect(rolled.rollback!.interval![0]).toBeGreaterThan(0);
    expect(rolled.readings[0]).toMatchObject({ harmed: true });
    expect(await served()).toMatchObject({ value: 'false' });
    expect((await served()).rollout ?? null).toBeNull();
    expect((await audit())[0]).toMatchObject({ action: 'rolled_back', actor: { type: 'service' } });
    expect(await deliveries()).toEqual(['rollout.created', 'rollout.rolled_back']);
  });

  it('when the arms do not split 1 : 1, then the check holds the rollout — it does not advance, once audited — and lifts the hold when they do again', async () => {
    const { get, expose, audit, deliveries } = await arrange({ steps: [{ percentage: 50, hold_seconds: 0, minimum_exposures: 0 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] });
    await expose(50, 120, undefined, 'new');
    await check();
    await check();
    const held = await get();
    expect(held).toMatchObject({ state: 'running', step: 0 });
    expect(held.hold!.sample_ratio_p_value).toBeLessThan(0.001);
    expect((await audit()).filter((e) => e.action === 'held')).toHaveLength(1);
    expect(await deliveries()).toEqual(['rollout.created', 'rollout.held']);
    await expose(50, 120, undefined, 'current');
    await check();
    expect((await get()).hold).toBeNull();
    await check();
    expect((await get()).state).toBe('released');
  });

  // Two pools on PostgreSQL, as two processes have; SQLite's one connection of this process, which serialises its writers.
  it('when checks run at once, from two pools where the engine has them, then exactly one acts on the rollout', async () => {
    const { get, expose, audit } = await arrange({ steps: [{ percentage: 10, hold_seconds: 0, minimum_exposures: 5 }, { percentage: 50, hold_seconds: 0, minimum_exposures: 1000 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] });
    await expose(10, 6);
    const other = engine === 'postgres' ? await openStorageAt(server().storageEnv) : server().storage;
    try {
      const results = await Promise.all([checkRollouts(server().storage), checkRollouts(other), checkRollouts(server().storage), checkRollouts(other)]);
      expect(results.flat().filter((acted) => acted.action === 'advanced')).toHaveLength(1);
    } finally {
      if (other !== server().storage) await other.close();
    }
    expect((await get()).history).toHaveLength(2);
    expect((await audit()).filter((e) => e.action === 'advanced')).toHaveLength(1);
  });
});
