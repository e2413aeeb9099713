// What a team may hold (TEAM_LIMITS, stated in the contract's Limits): going past a limit is a 409
// of type limit-reached that stores nothing, and room made by a delete or a stop can be used again.
// The whole config is bounded too: a change that would make GET …/config answer more names its field.
import { describe, expect, it } from 'vitest';
import { TEAM_LIMITS } from '../../server/teams/limits';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, inParallel } from '../support/fixtures';
import type { TestTeam } from '../support/team';

const LIMIT_REACHED = 'urn:experimentation:problem:limit-reached';

/** A condition of about 56 KB (55 alternatives of 1 000 characters), well within a body's 64 KiB. */
const conditionOf = (alternatives: number) => ({ $or: Array.from({ length: alternatives }, (_, i) => ({ plan: String(i).padEnd(1000, 'x') })) });

describe.each(engines)('team limits on %s', (engine) => {
  const server = useServer(engine);

  async function send(team: TestTeam, method: string, path: string, body?: unknown) {
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}${path}`, {
      method,
      headers: { authorization: `Bearer ${team.token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { type?: string; detail?: string; errors?: Array<{ path: string }>; data?: any } };
  }

  async function fill(team: TestTeam, count: number, path: string, body: (i: number) => unknown) {
    const statuses = await inParallel([...Array(count).keys()], 8, async (i) => (await send(team, 'POST', path, body(i))).status);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  }

  async function total(team: TestTeam, what: 'events_count' | 'experiments_count') {
    return ((await send(team, 'GET', '')).body.data as Record<string, number>)[what];
  }

  it(`when a team has ${TEAM_LIMITS.events} events, then another is a 409 limit-reached, until one is deleted`, async () => {
    const team = await server().newTeam();
    await fill(team, TEAM_LIMITS.events, '/events', (i) => ({ key: `e${i}` }));

    const refused = await send(team, 'POST', '/events', { key: 'one_more' });
    expect(refused).toMatchObject({ status: 409, body: { type: LIMIT_REACHED, detail: expect.stringContaining(`(${TEAM_LIMITS.events})`) } });
    expect(await total(team, 'events_count')).toBe(TEAM_LIMITS.events);

    expect((await send(team, 'DELETE', '/events/e0')).status).toBe(200);
    expect((await send(team, 'POST', '/events', { key: 'one_more' })).status).toBe(200);
  });

  it('when creates race for the last free places, then exactly the limit is stored', async () => {
    const team = await server().newTeam();
    await fill(team, TEAM_LIMITS.events - 3, '/events', (i) => ({ key: `e${i}` }));

    const statuses = await inParallel([...Array(10).keys()], 10, async (i) => (await send(team, 'POST', '/events', { key: `race${i}` })).status);

    expect(statuses.sort()).toEqual([200, 200, 200, 409, 409, 409, 409, 409, 409, 409]);
    expect(await total(team, 'events_count')).toBe(TEAM_LIMITS.events);
  });

  it(`when a team has ${TEAM_LIMITS.experiments} experiments, then another is a 409 limit-reached`, async () => {
    const team = await server().newTeam();
    await send(team, 'POST', '/events', { key: 'goal' });
    await fill(team, TEAM_LIMITS.experiments, '/experiments', (i) => ({ key: `x${i}`, event: 'goal' }));

    expect(await send(team, 'POST', '/experiments', { key: 'one_more', event: 'goal' })).toMatchObject({ status: 409, body: { type: LIMIT_REACHED } });
    expect(await total(team, 'experiments_count')).toBe(TEAM_LIMITS.experiments);
  });

  it(`when a team runs ${TEAM_LIMITS.runningExperiments} experiments, then starting another is a 409 limit-reached, until one stops`, async () => {
    const team = await server().newTeam();
    await inParallel([...Array(TEAM_LIMITS.runningExperiments + 1).keys()], 4, (i) => createExperiment(team, `run${i}`, { event: 'goal', start: i < TEAM_LIMITS.runningExperiments }));

    const refused = await send(team, 'POST', `/experiments/run${TEAM_LIMITS.runningExperiments}/start`);
    expect(refused).toMatchObject({ status: 409, body: { type: LIMIT_REACHED } });
    expect(((await send(team, 'GET', `/experiments/run${TEAM_LIMITS.runningExperiments}`)).body.data as { status: string }).status).toBe('draft');

    expect((await send(team, 'POST', '/experiments/run0/stop')).status).toBe(200);
    expect((await send(team, 'POST', `/experiments/run${TEAM_LIMITS.runningExperiments}/start`)).status).toBe(200);
  });

  it(`when an experiment has ${TEAM_LIMITS.variantsPerExperiment} variants, then another is a 409 limit-reached`, async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'wide', { event: 'goal', start: false });
    await fill(team, TEAM_LIMITS.variantsPerExperiment - 2, '/experiments/wide/variants', (i) => ({ key: `v${i}`, traffic: 0 }));

    expect(await send(team, 'POST', '/experiments/wide/variants', { key: 'one_more' })).toMatchObject({ status: 409, body: { type: LIMIT_REACHED } });
  });

  it(`when a team has ${TEAM_LIMITS.features} flags, then another is a 409 limit-reached`, async () => {
    const team = await server().newTeam();
    await fill(team, TEAM_LIMITS.features, '/features', (i) => ({ key: `f${i}` }));

    expect(await send(team, 'POST', '/features', { key: 'one_more' })).toMatchObject({ status: 409, body: { type: LIMIT_REACHED } });
  });

  it(`when the flags' values would hold more than ${TEAM_LIMITS.flagValueCharacters} characters, then the create or update is a 409 limit-reached and changes nothing`, async () => {
    const team = await server().newTeam();
    const large = 'v'.repeat(10_000);
    const fitting = Math.floor(TEAM_LIMITS.flagValueCharacters / large.length);
    await fill(team, fitting, '/features', (i) => ({ key: `big${i}`, value: large }));
    const room = TEAM_LIMITS.flagValueCharacters - fitting * large.length;

    expect(await send(team, 'POST', '/features', { key: 'too_big', value: 'x'.repeat(room + 1) })).toMatchObject({ status: 409, body: { type: LIMIT_REACHED } });
    expect((await send(team, 'POST', '/features', { key: 'just_fits', value: 'x'.repeat(room) })).status).toBe(200);
    expect(await send(team, 'PUT', '/features/just_fits', { value: 'x'.repeat(room + 1) })).toMatchObject({ status: 409, body: { type: LIMIT_REACHED } });
    expect(((await send(team, 'GET', '/features/just_fits')).body.data as { value: string }).value).toHaveLength(room);
    expect((await send(team, 'PUT', '/features/big0', { value: 'small' })).status).toBe(200);
    expect((await send(team, 'PUT', '/features/just_fits', { value: 'x'.repeat(room + 1) })).status).toBe(200);

    const config = await fetch(`${server().baseUrl}/api/teams/${team.id}/config`, { headers: { authorization: `Bearer ${team.ingestKey}` } });
    console.log(`[limits ${engine}] a config at the flag-value limit: ${(await config.arrayBuffer()).byteLength} bytes`);
  });

  async function configBytes(team: TestTeam): Promise<number> {
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/config`, { headers: { authorization: `Bearer ${team.ingestKey}` } });
    expect(response.status).toBe(200);
    return (await response.arrayBuffer()).byteLength;
  }

  const refusal = (path: string) => ({ status: 409, body: { type: LIMIT_REACHED, errors: [{ path, message: expect.stringContaining(`more than ${TEAM_LIMITS.configBytes}`) }] } });

  it(`when running experiments' conditions, then flags, would take the config past ${TEAM_LIMITS.configBytes} bytes, then the change is a 409 limit-reached naming its field, and nothing is stored`, async () => {
    // Arrange: experiments of about 56 KB of conditions each, started until a start is refused
    const team = await server().newTeam();
    expect((await send(team, 'POST', '/events', { key: 'goal' })).status).toBe(200);
    let started = 0;
    let refused: Awaited<ReturnType<typeof send>> | undefined;
    for (; started < 25; started++) {
      const key = `x${started}`;
      expect((await send(team, 'POST', '/experiments', { key, event: 'goal', conditions: conditionOf(55) })).status).toBe(200);
      expect((await send(team, 'POST', `/experiments/${key}/variants`, { key: 'control', control: true })).status).toBe(200);
      expect((await send(team, 'POST', `/experiments/${key}/variants`, { key: 'treatment' })).status).toBe(200);
      const start = await send(team, 'POST', `/experiments/${key}/start`);
      if (start.status !== 200) {
        refused = start;
        break;
      }
    }

    // Assert: refused once the next experiment would not fit (each adds about 56 KB; the flag limits are far off), the draft left a draft
    expect(refused).toMatchObject(refusal('/path/experiment'));
    const held = await configBytes(team);
    expect(held).toBeLessThanOrEqual(TEAM_LIMITS.configBytes);
    expect(held + JSON.stringify(conditionOf(55)).length).toBeGreaterThan(TEAM_LIMITS.configBytes);
    expect((await send(team, 'GET', `/experiments/x${started}`)).body.data.status).toBe('draft');

    // Act: flags of 10 000 characters added until one is refused (60 000 characters at most: a sixth of the flags' own limit)
    let flags = 0;
    let refusedFlag: Awaited<ReturnType<typeof send>> | undefined;
    for (; flags < 6 && !refusedFlag; flags++) {
      const added = await send(team, 'POST', '/features', { key: `f${flags}`, value: 'v'.repeat(10_000) });
      if (added.status !== 200) refusedFlag = added;
    }

    // Assert: the flag that would not fit is refused, naming its value, and is not stored
    expect(refusedFlag).toMatchObject(refusal('/body/value'));
    expect((await send(team, 'GET', `/features/f${flags - 1}`)).status).toBe(404);

    // Act and assert: with less than 2 KB left, a running experiment's conditions grown by about 7 KB are refused, its conditions unchanged
    const room = TEAM_LIMITS.configBytes - (await configBytes(team));
    expect((await send(team, 'POST', '/features', { key: 'filler', value: 'v'.repeat(Math.max(0, room - 2000)) })).status).toBe(200);
    const grown = await send(team, 'PUT', '/experiments/x0', { conditions: conditionOf(62) });
    expect(grown).toMatchObject(refusal('/body/conditions'));
    expect((await send(team, 'GET', '/experiments/x0')).body.data.conditions).toEqual(conditionOf(55));
    expect(await configBytes(team)).toBeLessThanOrEqual(TEAM_LIMITS.configBytes);

    // … and room made by a stop can be used again
    expect((await send(team, 'POST', '/experiments/x0/stop')).status).toBe(200);
    expect((await send(team, 'POST', `/experiments/x${started}/start`)).status).toBe(200);
  });
});
