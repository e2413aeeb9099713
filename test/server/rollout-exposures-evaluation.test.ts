// Every evaluation path records a participant's exposure to a flag's safe rollout, as it records
// experiment exposures: the package's SDK and OpenFeature server provider, `POST …/evaluate`
// with `enrol`, OFREP's single-flag evaluation. Each participant the rollout decided counts once,
// in the arm the decision gave; the others, and evaluations that record nothing, count nowhere.
import { OpenFeature } from '@openfeature/server-sdk';
import { ExperimentationServerProvider } from 'experimentation-api/openfeature';
import { createClient } from 'experimentation-api/sdk';
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';

type Arm = 'new' | 'current';

const FLAG = 'checkout';
/** Held at 50 %: each participant the rollout is for is in one arm or the other. */
const STEPS = [
  { percentage: 50, hold_seconds: 3600, minimum_exposures: 0 },
  { percentage: 100, hold_seconds: 0, minimum_exposures: 0 },
];
const PRO = { plan: 'pro' };
/** The rollout is for plan pro: a free participant is served the flag's own value and never exposed. */
const FREE = { plan: 'free' };
const PARTICIPANTS = Array.from({ length: 24 }, (_, n) => `visitor-${n}`);

let domains = 0;

describe.each(engines)("safe rollouts' exposures recorded by each evaluation path on %s", (engine) => {
  const server = useServer(engine);

  async function arrange() {
    const team = await server().newTeam();
    const path = { team: team.id };
    expect((await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: FLAG, type: 'boolean', enabled: true, value: 'false' } })).response.status).toBe(200);
    const created = await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: FLAG } }, body: { value: 'true', conditions: PRO, steps: STEPS } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const exposures = async () => (await team.api.GET('/api/teams/{team}/features/{feature}/rollouts/{rollout}', { params: { path: { ...path, feature: FLAG, rollout: '1' } } })).data!.data.exposures;
    const participant = async (key: string) => (await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { ...path, participant: key } } })).data?.data;
    return { team, path, exposures, participant };
  }

  /** How many participants each arm holds, by the arms the evaluations answered; both arms hold some. */
  function counted(arms: ReadonlyMap<string, Arm>): Record<Arm, number> {
    const count = (arm: Arm) => [...arms.values()].filter((each) => each === arm).length;
    expect(arms.size).toBe(PARTICIPANTS.length);
    expect(count('new')).toBeGreaterThan(0);
    expect(count('current')).toBeGreaterThan(0);
    return { new: count('new'), current: count('current') };
  }

  it("when the package's SDK decides the flag by its rollout, then each participant's exposure is sent once, with its attributes, and counts in its arm", async () => {
    // Arrange
    const { team, exposures, participant } = await arrange();
    const client = createClient({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
    const arms = new Map<string, Arm>();
    try {
      await client.ready();

      // Act: each participant evaluated twice, through feature() and featureDetails()
      for (const key of PARTICIPANTS) {
        client.feature(FLAG, key, PRO);
        const details = client.featureDetails(FLAG, key, PRO)!;
        expect(details.reason, key).toBe('rollout');
        arms.set(key, details.rolloutArm!);
      }
      expect(client.featureDetails(FLAG, 'visitor-free', FREE)!.reason).toBe('default');
      await client.flush();

      // Assert
      expect(client.stats()).toMatchObject({ delivered: PARTICIPANTS.length, rejected: 0 });
    } finally {
      await client.close();
    }
    expect(await exposures()).toEqual(counted(arms));
    expect((await participant('visitor-0'))!.attributes).toEqual(PRO);
    expect(await participant('visitor-free')).toBeUndefined();
  });

  it("when the package's OpenFeature server provider resolves the flag by its rollout, then each participant's exposure counts once in its arm", async () => {
    // Arrange
    const { team, exposures } = await arrange();
    const provider = new ExperimentationServerProvider({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey });
    const domain = `rollout-exposures-${++domains}`;
    await OpenFeature.setProviderAndWait(domain, provider);
    const client = OpenFeature.getClient(domain);
    const arms = new Map<string, Arm>();
    try {
      // Act
      for (const targetingKey of [...PARTICIPANTS, ...PARTICIPANTS]) {
        const details = await client.getBooleanDetails(FLAG, false, { targetingKey, ...PRO });
        expect(details.variant, targetingKey).toMatch(/^rollout_(new|current)$/);
        arms.set(targetingKey, details.variant!.slice('rollout_'.length) as Arm);
      }
      expect((await client.getBooleanDetails(FLAG, false, { targetingKey: 'visitor-free', ...FREE })).variant).toBe('default');
    } finally {
      // Closing sends what is queued.
      await provider.onClose();
    }

    // Assert
    expect(await exposures()).toEqual(counted(arms));
  });

  it('when POST …/evaluate answers the flag by its rollout, then with enrol the exposure counts once in its arm, and without it nothing is recorded', async () => {
    // Arrange
    const { team, path, exposures, participant } = await arrange();
    const evaluate = async (key: string, attributes: Record<string, string>, enrol?: boolean) => {
      const answer = await team.ingest.POST('/api/teams/{team}/evaluate', { params: { path }, body: { participant: key, attributes, ...(enrol !== undefined && { enrol }) } });
      expect(answer.response.status, JSON.stringify(answer.error)).toBe(200);
      return answer.data!.data.features[FLAG]!;
    };

    // Act and assert: without enrol, nothing
    for (const key of PARTICIPANTS) await evaluate(key, PRO);
    await evaluate(PARTICIPANTS[0]!, PRO, false);
    expect(await exposures()).toEqual({ new: 0, current: 0 });

    // Act: with enrol, each participant twice
    const arms = new Map<string, Arm>();
    for (const key of [...PARTICIPANTS, ...PARTICIPANTS]) {
      const outcome = await evaluate(key, PRO, true);
      expect(outcome.reason, key).toBe('rollout');
      arms.set(key, outcome.rollout_arm!);
    }
    expect((await evaluate('visitor-free', FREE, true)).reason).toBe('default');

    // Assert
    expect(await exposures()).toEqual(counted(arms));
    expect((await participant('visitor-free'))!.attributes).toEqual(FREE);
  });

  it("when OFREP's single-flag evaluation answers the flag by its rollout, then the exposure counts once in its arm, and the bulk evaluation records nothing", async () => {
    // Arrange
    const { team, exposures, participant } = await arrange();
    const ofrep = async (suffix: string, context: Record<string, string>) => {
      const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/ofrep/v1/evaluate/flags${suffix}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ context }),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { variant?: string; flags?: Array<{ key: string; variant?: string }> };
    };

    // Act and assert: the bulk evaluation, nothing
    for (const targetingKey of PARTICIPANTS) {
      const bulk = await ofrep('', { targetingKey, ...PRO });
      expect(bulk.flags!.find((flag) => flag.key === FLAG)!.variant, targetingKey).toMatch(/^rollout_/);
    }
    expect(await exposures()).toEqual({ new: 0, current: 0 });

    // Act: the single-flag evaluation, each participant twice
    const arms = new Map<string, Arm>();
    for (const targetingKey of [...PARTICIPANTS, ...PARTICIPANTS]) {
      const { variant } = await ofrep(`/${FLAG}`, { targetingKey, ...PRO });
      expect(variant, targetingKey).toMatch(/^rollout_(new|current)$/);
      arms.set(targetingKey, variant!.slice('rollout_'.length) as Arm);
    }
    expect((await ofrep(`/${FLAG}`, { targetingKey: 'visitor-free', ...FREE })).variant).toBe('default');

    // Assert
    expect(await exposures()).toEqual(counted(arms));
    expect((await participant('visitor-0'))!.attributes).toEqual(PRO);
    expect(await participant('visitor-free')).toBeUndefined();
  });
});
