import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { kill, sleep, startChild, stopAllChildren } from '../support/process';
import { freshStorage } from '../support/storage';
import { clientsOf, createTeamAt, type TestTeam } from '../support/team';

// A ramp each check advances one step: no hold time, no exposures needed.
const STEPS = [10, 20, 50, 100].map((percentage) => ({ percentage, hold_seconds: 0, minimum_exposures: 0 }));
const ROLLOUTS = 12;

async function createRollouts(team: TestTeam) {
  const path = { team: team.id };
  await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'checkout_error', type: 'unique' } });
  for (let i = 0; i < ROLLOUTS; i++) {
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: `flag_${i}`, type: 'boolean', enabled: true, value: 'false' } });
    const created = await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: `flag_${i}` } }, body: { value: 'true', guardrails: [{ event: 'checkout_error', direction: 'decrease' }], steps: STEPS } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
  }
}

/** Each rollout's state and steps, and the service's audit entries, once every rollout is released. */
async function waitForReleases(team: TestTeam) {
  const path = { team: team.id };
  for (;;) {
    const rollouts = await Promise.all(
      Array.from({ length: ROLLOUTS }, async (_, i) => (await team.api.GET('/api/teams/{team}/features/{feature}/rollouts/{rollout}', { params: { path: { ...path, feature: `flag_${i}`, rollout: '1' } } })).data!.data),
    );
    if (rollouts.every((rollout) => rollout.state === 'released')) {
      const entries = [];
      let cursor: string | undefined;
      do {
        const page = (await team.api.GET('/api/teams/{team}/audit-log', { params: { path, query: { resource_type: 'rollout', limit: 100, ...(cursor && { cursor }) } } })).data!;
        entries.push(...page.data);
        cursor = page.meta?.next_cursor ?? undefined;
      } while (cursor);
      return { rollouts, entries: entries.filter((entry) => entry.actor.type === 'service') };
    }
    await sleep(100);
  }
}

/** Every rollout went 0 → 1 → 2 → released once: its history has each step once, and the service audited each move once. */
function expectEachMoveOnce({ rollouts, entries }: Awaited<ReturnType<typeof waitForReleases>>) {
  for (const rollout of rollouts) {
    expect(rollout.history.map((h) => h.step)).toEqual([0, 1, 2, 3]);
    const moves = entries.filter((entry) => entry.resource_key === `${rollout.feature}/1`).map((entry) => entry.action).reverse();
    expect(moves, rollout.feature).toEqual(['advanced', 'advanced', 'released']);
  }
}

describe.each(engines)('safe rollouts decided by server processes on %s', (engine) => {
  afterAll(stopAllChildren);

  it('when two server processes check the same rollouts every 50 ms, then each rollout moves once per step: exactly one process acts on it at a time', async () => {
    const { storageEnv, cleanup } = await freshStorage(engine);
    try {
      const env = { ROLLOUT_CHECK_SECONDS: '0.05' };
      const [first, second] = await Promise.all([startChild(storageEnv, env), startChild(storageEnv, env)]);
      const team = await createTeamAt(first!.baseUrl, storageEnv);
      await createRollouts(team);
      expectEachMoveOnce(await waitForReleases(team));
      expect(second!.running()).toBe(true);
    } finally {
      await stopAllChildren();
      await cleanup();
    }
  });

  it('when the deciding process is killed (SIGKILL) again and again while rollouts move, then after a restart every rollout is whole: each move stored with its audit entry, or neither', async () => {
    const { storageEnv, cleanup } = await freshStorage(engine);
    try {
      const env = { ROLLOUT_CHECK_SECONDS: '0.02' };
      let server = await startChild(storageEnv, { ROLLOUT_CHECK_SECONDS: '3600' });
      const team = await createTeamAt(server.baseUrl, storageEnv);
      await createRollouts(team);
      await kill(server);
      for (let kills = 0; kills < 4; kills++) {
        server = await startChild(storageEnv, env);
        // Killed at a different point of its checks each time.
        await sleep(20 + kills * 37);
        await kill(server);
      }
      server = await startChild(storageEnv, env);
      const clients = clientsOf(server.baseUrl, team);
      expectEachMoveOnce(await waitForReleases({ ...team, ...clients }));
    } finally {
      await stopAllChildren();
      await cleanup();
    }
  });
});
