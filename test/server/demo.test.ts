import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type components } from 'experimentation-api';
import { runDemo, type DemoIo } from '../../server/cli/demo-command';
import { assignVariant } from '../../domain/assignment';
import { engines } from '../support/engines';
import { seeded } from '../support/seeded';
import { startServer, type TestServer } from '../support/server';
import { freshStorage, openStorageAt, type StorageEnv } from '../support/storage';

type ExperimentResults = components['schemas']['ExperimentResults'];

const root = fileURLToPath(new URL('../../', import.meta.url));

describe.each(engines)('npm run demo on %s', (engine) => {
  let storageEnv: StorageEnv;
  let cleanup: () => Promise<void>;
  let server: TestServer;

  beforeAll(async () => {
    ({ storageEnv, cleanup } = await freshStorage(engine));
    server = await startServer({ storageEnv });
  });
  afterAll(async () => {
    await server?.close();
    await cleanup?.();
  });

  /** Runs the demo in this process on the test's storage; answers its exit code, what it printed and the progress it reported. */
  async function demo(...args: string[]) {
    const out: string[] = [];
    const progress: number[] = [];
    const io: DemoIo = {
      out: (text) => void out.push(text),
      err: (text) => void out.push(text),
      open: () => openStorageAt(storageEnv),
      baseUrl: 'http://127.0.0.1:3000',
      progress: (total) => ({ update: (done) => void progress.push(done / total), stop: () => undefined }),
      random: seeded(42),
    };
    const code = await runDemo(args, io);
    const text = out.join('\n');
    return { code, text, progress, team: Number(/^Team: +(\d+)/m.exec(text)?.[1]), token: /^API token: +(\S+)/m.exec(text)?.[1] ?? '' };
  }

  async function resultsWith(token: string, team: number): Promise<ExperimentResults> {
    const { data, response } = await createApiClient(server.baseUrl, token).GET('/api/teams/{team}/experiments/{experiment}/results', {
      params: { path: { team, experiment: 'checkout_redesign' }, query: { events: ['purchase', 'add_to_cart', 'revenue'] } },
    });
    expect(response.status).toBe(200);
    return data!.data;
  }

  /** How many of the demo's visitors the experiment's seed puts in each variant, from the config an SDK reads. */
  async function splitByHash(token: string, team: number, visitors: number): Promise<Record<string, number>> {
    const { data } = await createApiClient(server.baseUrl, token).GET('/api/teams/{team}/config', { params: { path: { team } } });
    const experiment = data!.data.experiments.find((e) => e.key === 'checkout_redesign')!;
    const split = Object.fromEntries(experiment.variants.map((v) => [v.key, 0]));
    for (let i = 1; i <= visitors; i++) {
      const variant = assignVariant(experiment.seed, `visitor-${String(i).padStart(6, '0')}`, experiment.variants, experiment.hash_version);
      split[variant!.key]! += 1;
    }
    return split;
  }

  it('when run, then it plays the participants over the days through ingest with a progress bar, and prints a working token and the pages; run again it reuses them; --reset starts again', async () => {
    // Act: a first run
    const first = await demo('--participants', '1200', '--days', '3');

    // Assert: the output, the progress, and the experiment as the API reads it
    expect(first.code, first.text).toBe(0);
    expect(first.text).toMatch(/^Ingest key: +esk_/m);
    expect(first.text).toContain('http://127.0.0.1:3000/console#/experiments/checkout_redesign');
    expect(first.text).toContain('http://127.0.0.1:3000/docs');
    expect(first.progress.at(-1)).toBe(1);
    expect(first.progress).toEqual([...first.progress].sort((a, b) => a - b));
    const team = (await createApiClient(server.baseUrl, first.token).GET('/api/current-team', {})).data?.data;
    expect(team).toMatchObject({ id: first.team, name: 'Demo shop' });
    const results = await resultsWith(first.token, first.team);
    expect(results).toMatchObject({ status: 'running', goal: 'purchase', control: 'control', participants: 1200 });
    // The split is the experiment's own random seed's: each visitor counted in the variant its hash names
    const expected = await splitByHash(first.token, first.team, 1200);
    expect(results.events[0]!.variants.map((v) => [v.variant, v.participants])).toEqual(Object.entries(expected));
    expect(results.srm_warning).toBe(results.srm.p_value! < 0.001);
    expect(results.runtime.days_running).toBeGreaterThanOrEqual(2.99);
    expect(results.runtime.days_running).toBeLessThanOrEqual(3.01);
    expect(results.events.map((e) => e.event)).toEqual(['purchase', 'add_to_cart', 'revenue']);
    // Revenue per visitor: a mean for each variant, compared with the control's
    const revenue = results.events[2]!.variants.map((v) => v.statistics.means!);
    expect(revenue.every((means) => means.mean! > 0)).toBe(true);
    expect(revenue[1]!.difference_interval).not.toBeNull();
    // Returning customers bought before the experiment: purchases and revenue are adjusted on that past (CUPED)
    for (const event of [results.events[0]!, results.events[2]!]) {
      const adjustment = event.variants[1]!.statistics.regression_adjustment;
      expect(adjustment?.variance_reduction, event.event).toBeGreaterThan(0.05);
    }
    const days = results.history.days;
    expect(days.length).toBeGreaterThanOrEqual(3);
    expect(days.length).toBeLessThanOrEqual(4);
    expect(days.at(-1)!.day).toBe(new Date().toISOString().slice(0, 10));
    expect(days.at(-1)!.variants.reduce((sum, v) => sum + v.participants, 0)).toBe(1200);
    // Spread over the days: no day holds all of them
    expect(days.every((d, i) => i === 0 || d.variants[0]!.participants > days[i - 1]!.variants[0]!.participants)).toBe(true);

    // Act: again — reused, with a new token
    const again = await demo('--participants', '1200', '--days', '3');
    expect(again.code, again.text).toBe(0);
    expect(again.text).toContain('is there already');
    expect(again.team).toBe(first.team);
    expect(again.token).not.toBe(first.token);
    expect(again.text).not.toMatch(/Ingest key/);
    expect(again.progress).toEqual([]);
    expect((await resultsWith(again.token, again.team)).participants).toBe(1200);

    // Act: --reset — a new team, played again; the old one is gone
    const reset = await demo('--reset', '--participants', '600', '--days', '2');
    expect(reset.code, reset.text).toBe(0);
    expect(reset.team).not.toBe(first.team);
    expect((await resultsWith(reset.token, reset.team)).participants).toBe(600);
    const gone = await createApiClient(server.baseUrl, reset.token).GET('/api/teams/{team}', { params: { path: { team: first.team } } });
    expect(gone.response.status).toBe(404);
  });

  it('when the command line is wrong, then it says what and exits 2; --help exits 0 with the usage', async () => {
    const zero = await demo('--days', '0');
    expect(zero.code).toBe(2);
    expect(zero.text).toMatch(/^--days must be a whole number from 1 to 365\./);
    const many = await demo('--participants', '12ab');
    expect(many.code).toBe(2);
    expect(many.text).toMatch(/^--participants must be a whole number/);
    const help = await demo('--help');
    expect(help.code).toBe(0);
    expect(help.text).toMatch(/^Usage: npm run demo/);
  });
});

describe('npm run demo as a process', () => {
  it('when run on fresh storage, then it exits 0 and prints the token and the pages', async () => {
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    try {
      const { stdout } = await promisify(execFile)('npm', ['run', '-s', 'demo', '--', '--participants', '300', '--days', '2'], { cwd: root, env: { ...process.env, ...storageEnv, PORT: '4321' } });
      expect(stdout).toMatch(/^API token: +est_/m);
      expect(stdout).toContain('http://127.0.0.1:4321/console#/experiments/checkout_redesign');
    } finally {
      await cleanup();
    }
  });
});
