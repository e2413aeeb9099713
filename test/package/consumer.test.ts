// The consumer package (generated/) as someone outside this repository gets it: packed with
// `npm pack`, installed from the tarball into a project of its own, type-checked with
// `moduleResolution` NodeNext and bundler, and run against the real server.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const tsc = join(root, 'node_modules/typescript/bin/tsc');
// TypeScript 7, the native compiler (@typescript/native-preview).
const tsgo = join(root, 'node_modules/.bin/tsgo');
const contract = JSON.parse(readFileSync(join(root, 'generated/openapi.json'), 'utf8')) as {
  info: { version: string };
  paths: Record<string, Record<string, { operationId: string; 'x-codeSamples': Array<{ lang: string; source: string }> }>>;
};

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string }>;
}

/** A consumer's program: three calls of the README and the package's other entry points. */
function program(baseUrl: string, team: TestTeam): string {
  return `import { createApiClient, evaluateCondition, evaluateConfig, type ApiClient } from 'experimentation-api';
import type { components } from 'experimentation-api/types';
import document from 'experimentation-api/openapi.json' with { type: 'json' };
import { createClient, type Client, type SdkError } from 'experimentation-api/sdk';

type Experiment = components['schemas']['Experiment'];
const team = ${team.id};
const api: ApiClient = createApiClient(${JSON.stringify(baseUrl)}, ${JSON.stringify(team.token)});
const ingest = createApiClient(${JSON.stringify(baseUrl)}, ${JSON.stringify(team.ingestKey)});

const event = await api.POST('/api/teams/{team}/events', { params: { path: { team } }, body: { key: 'signed_up' } });
const experiment = await api.POST('/api/teams/{team}/experiments', { params: { path: { team } }, body: { key: 'welcome', event: 'signed_up' } });
for (const key of ['control', 'treatment']) {
  await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team, experiment: 'welcome' } }, body: { key, control: key === 'control' } });
}
await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team, experiment: 'welcome' } } });
const listed = await api.GET('/api/teams/{team}/experiments', { params: { path: { team }, query: { include: ['variants'] } } });
const seen = await ingest.POST('/api/teams/{team}/ingest', { params: { path: { team } }, body: { participant: 'user-42', event: 'signed_up' } });
const refused = await ingest.GET('/api/teams/{team}/events', { params: { path: { team } } });
const experiments: Experiment[] = listed.data?.data ?? [];
const config = await ingest.GET('/api/teams/{team}/config', { params: { path: { team } } });
const evaluation: components['schemas']['Evaluation'] | undefined = config.data && evaluateConfig(config.data.data, { key: 'user-42', attributes: { country: 'DE' } });
const adult: boolean = evaluateCondition({ age: { $gte: 18 } }, { age: 30 });
const errors: SdkError[] = [];
const sdk: Client = createClient({ baseUrl: ${JSON.stringify(baseUrl)}, team, ingestKey: ${JSON.stringify(team.ingestKey)}, onError: (error) => errors.push(error) });
await sdk.ready();
const chosen: string | null = sdk.experiment('welcome', 'user-7');
sdk.track('user-7', 'signed_up');
await sdk.close();

console.log(JSON.stringify({
  version: document.info.version,
  event: event.data?.data.key,
  experiment: experiment.data?.data.status,
  variants: experiments.map((e) => e.variants?.map((v) => v.key)),
  assignments: seen.data?.data.assignments.map((a) => [a.experiment, a.variant]),
  refused: [refused.response.status, refused.error?.title],
  evaluated: [evaluation?.experiments.welcome, adult],
  sdk: [chosen, sdk.stats().delivered, errors],
}));
`;
}

/**
 * Calls the contract does not allow, each answered 400 by the server: a required property missing,
 * a property of the wrong type, an unknown body property (beside known ones, and nested), an
 * unknown query parameter beside a known one, an unknown option.
 */
const WRONG_BODY = `import { createApiClient } from 'experimentation-api';
const api = createApiClient('http://127.0.0.1:3000', 'token');
await api.POST('/api/teams/{team}/experiments', { params: { path: { team: 1 } }, body: { key: 'welcome' } });
await api.POST('/api/teams/{team}/ingest', { params: { path: { team: 1 } }, body: { participant: 'user-42', event: 7 } });
await api.POST('/api/teams/{team}/experiments', { params: { path: { team: 1 } }, body: { key: 'welcome', event: 'signed_up', status: 'running' } });
await api.GET('/api/teams/{team}/experiments', { params: { path: { team: 1 }, query: { page: 1, sort: 'key' } } });
await api.POST('/api/teams/{team}/ingest', { params: { path: { team: 1 } }, body: { participant: { key: 'user-42', plan: 'pro' } } });
await api.GET('/api/teams/{team}/events', { params: { path: { team: 1 } }, retries: 3 });
`;

/** An OpenFeature application: both providers from the package, on the OpenFeature SDKs it installed itself. */
function openFeatureProgram(baseUrl: string, team: TestTeam): string {
  return `import { OpenFeature, type Provider } from '@openfeature/server-sdk';
import { OpenFeature as WebOpenFeature, type Provider as WebProvider } from '@openfeature/web-sdk';
import { ExperimentationServerProvider, ExperimentationWebProvider, type ProviderOptions } from 'experimentation-api/openfeature';

const options: ProviderOptions = { baseUrl: ${JSON.stringify(baseUrl)}, team: ${team.id}, ingestKey: ${JSON.stringify(team.ingestKey)} };
const serverProvider: Provider = new ExperimentationServerProvider(options);
await OpenFeature.setProviderAndWait(serverProvider);
const details = await OpenFeature.getClient().getBooleanDetails('dark_mode', false, { targetingKey: 'user-1', plan: 'pro' });
OpenFeature.getClient().track('signed_up', { targetingKey: 'user-1' });
const webProvider: WebProvider = new ExperimentationWebProvider(options);
await WebOpenFeature.setContext({ targetingKey: 'user-1' });
await WebOpenFeature.setProviderAndWait(webProvider);
const web = WebOpenFeature.getClient().getBooleanDetails('dark_mode', false);
await OpenFeature.close();
await WebOpenFeature.close();
console.log(JSON.stringify({ server: [details.value, details.reason, details.variant], web: [web.value, web.reason, web.variant] }));
`;
}

const COMMON = { strict: true, target: 'ES2022', lib: ['ES2022', 'DOM'], skipLibCheck: false, resolveJsonModule: true };

async function typeCheck(project: string, config: string, compiler: 'tsc' | 'tsgo' = 'tsc'): Promise<{ code: number; output: string }> {
  try {
    const [command, args] = compiler === 'tsc' ? [process.execPath, [tsc]] : [tsgo, []];
    const { stdout } = await run(command, [...args, '--project', join(project, config)], { cwd: project });
    return { code: 0, output: stdout };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, output: failure.stdout + failure.stderr };
  }
}

describe('the consumer package (generated/)', () => {
  const server = useServer('sqlite');
  const scratch = mkdtempSync(join(tmpdir(), 'consumer-'));
  const project = join(scratch, 'project');
  let packed: Packed;

  beforeAll(async () => {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: join(root, 'generated') });
    [packed] = JSON.parse(stdout) as Packed[];
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'a-consumer', private: true, type: 'module' }));
    await run('npm', ['install', join(scratch, packed.filename), '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project });
  }, 300_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('when packed, then it holds the contract, the types, the compiled client, the SDK and its licence only, versioned as the contract', () => {
    expect(packed.files.map((f) => f.path).sort()).toEqual([
      'LICENSE',
      'README.md',
      'api.d.ts',
      'client.d.ts',
      'client.js',
      'evaluate.d.ts',
      'evaluate.js',
      'openapi.json',
      'openapi.yaml',
      'openfeature.d.ts',
      'openfeature.js',
      'package.json',
      'removed-operations.json',
      'sdk.d.ts',
      'sdk.js',
    ]);
    expect(packed.filename).toBe(`experimentation-api-${contract.info.version}.tgz`);
    console.log(`[package] ${packed.filename}: ${packed.files.length} files, ${(packed.size / 1024).toFixed(1)} KiB packed, ${(packed.unpackedSize / 1024).toFixed(1)} KiB unpacked`);
  });

  it('when installed, then openapi-fetch (and its helper types) is all it brings', async () => {
    const installed = JSON.parse(readFileSync(join(project, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const names = Object.keys(installed.packages).map((path) => path.replace(/^.*node_modules\//, '')).sort();
    expect(names).toEqual(['experimentation-api', 'openapi-fetch', 'openapi-typescript-helpers']);
    console.log(`[package] installs ${names.length - 1} dependencies: ${names.slice(1).join(', ')}`);
  });

  it('when the entry points are resolved by Node, then ., ./sdk, ./openfeature, ./openapi.json, ./openapi.yaml and ./removed-operations.json resolve to files of the package', async () => {
    const entries = ['experimentation-api', 'experimentation-api/sdk', 'experimentation-api/openfeature', 'experimentation-api/openapi.json', 'experimentation-api/openapi.yaml', 'experimentation-api/removed-operations.json'];
    const script = `for (const s of ${JSON.stringify(entries)}) console.log(import.meta.resolve(s));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project });
    expect(stdout.trim().split('\n').map((url) => url.replace(/^.*node_modules\//, ''))).toEqual([
      'experimentation-api/client.js',
      'experimentation-api/sdk.js',
      'experimentation-api/openfeature.js',
      'experimentation-api/openapi.json',
      'experimentation-api/openapi.yaml',
      'experimentation-api/removed-operations.json',
    ]);
  });

  it('when installed, then it ships the removed operations — on their own and in the document — the same seven', async () => {
    const installed = join(project, 'node_modules/experimentation-api');
    const alone = JSON.parse(readFileSync(join(installed, 'removed-operations.json'), 'utf8')) as Array<{ method: string; path: string }>;
    const inDocument = JSON.parse(readFileSync(join(installed, 'openapi.json'), 'utf8'))['x-removed-operations'];
    expect(alone).toEqual(inDocument);
    expect(alone.map((removed) => `${removed.method} ${removed.path}`)).toContain('POST /api/teams/{team}/hit');
    expect(alone).toHaveLength(7);
  });

  it('when a program is type-checked with NodeNext and with bundler resolution, then it passes, and a wrong body fails', async () => {
    writeFileSync(join(project, 'main.ts'), program(server().baseUrl, await server().newTeam()));
    writeFileSync(join(project, 'wrong.ts'), WRONG_BODY);
    const nodeNext = { ...COMMON, module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'out' };
    const bundler = { ...COMMON, module: 'ESNext', moduleResolution: 'Bundler', noEmit: true };
    for (const [name, options, files] of [
      ['nodenext.json', nodeNext, ['main.ts']],
      ['bundler.json', bundler, ['main.ts']],
      ['wrong-nodenext.json', { ...nodeNext, noEmit: true }, ['wrong.ts']],
      ['wrong-bundler.json', bundler, ['wrong.ts']],
    ] as const) {
      writeFileSync(join(project, name), JSON.stringify({ compilerOptions: options, files }));
    }

    for (const config of ['nodenext.json', 'bundler.json']) {
      const { code, output } = await typeCheck(project, config);
      expect(output, config).toBe('');
      expect(code, config).toBe(0);
    }
    // TypeScript 7 type-checks the same program (no emit: the JavaScript run below is tsc's).
    writeFileSync(join(project, 'nodenext-7.json'), JSON.stringify({ compilerOptions: { ...nodeNext, noEmit: true }, files: ['main.ts'] }));
    for (const config of ['nodenext-7.json', 'bundler.json']) {
      const { code, output } = await typeCheck(project, config, 'tsgo');
      expect(output, `TypeScript 7 ${config}`).toBe('');
      expect(code, `TypeScript 7 ${config}`).toBe(0);
    }
    for (const config of ['wrong-nodenext.json', 'wrong-bundler.json']) {
      const { code, output } = await typeCheck(project, config);
      expect(code, config).not.toBe(0);
      expect(output, config).toMatch(/wrong\.ts\(3,\d+\): error TS2322: [^\n]*\n\s+Property 'event' is missing in type '\{ key: string; \}'/);
      expect(output, config).toMatch(/wrong\.ts\(4,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
      expect(output, config).toMatch(/wrong\.ts\(5,\d+\): error TS2353: Object literal may only specify known properties, and 'status' does not exist/);
      expect(output, config).toMatch(/wrong\.ts\(6,\d+\): error TS2353: Object literal may only specify known properties, and 'sort' does not exist/);
      expect(output, config).toMatch(/wrong\.ts\(7,\d+\): error TS2353: Object literal may only specify known properties, and 'plan' does not exist/);
      expect(output, config).toMatch(/wrong\.ts\(8,\d+\): error TS2353: Object literal may only specify known properties, and 'retries' does not exist/);
    }
  });

  it('when an OpenFeature application installs its SDKs beside the package, then both providers type-check against them and run against the real server', async () => {
    // Arrange: a project of its own (its @types/node would change the other programs' checks). The
    // OpenFeature SDKs are the package's optional peers — the application installs them.
    const app = join(scratch, 'openfeature-app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'an-openfeature-app', private: true, type: 'module' }));
    const installed = JSON.parse(readFileSync(join(root, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    // @types/node too: the server SDK's declarations name node:events, as a Node application's do.
    const peers = ['@openfeature/core', '@openfeature/server-sdk', '@openfeature/web-sdk', '@types/node'].map((name) => `${name}@${installed.packages[`node_modules/${name}`]!.version}`);
    await run('npm', ['install', join(scratch, packed.filename), ...peers, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: app });
    const team = await server().newTeam();
    await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'dark_mode', type: 'boolean', enabled: true, value: 'true' } });
    writeFileSync(join(app, 'openfeature.ts'), openFeatureProgram(server().baseUrl, team));
    const nodeNext = { ...COMMON, module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'out' };
    writeFileSync(join(app, 'nodenext.json'), JSON.stringify({ compilerOptions: nodeNext, files: ['openfeature.ts'] }));
    writeFileSync(join(app, 'bundler.json'), JSON.stringify({ compilerOptions: { ...COMMON, module: 'ESNext', moduleResolution: 'Bundler', noEmit: true }, files: ['openfeature.ts'] }));

    // Act
    const checks = [await typeCheck(app, 'nodenext.json'), await typeCheck(app, 'bundler.json')];
    const { stdout } = await run(process.execPath, [join(app, 'out/openfeature.js')], { cwd: app });

    // Assert
    expect(checks).toEqual([{ code: 0, output: '' }, { code: 0, output: '' }]);
    expect(JSON.parse(stdout)).toEqual({ server: [true, 'STATIC', 'default'], web: [true, 'STATIC', 'default'] });
  });

  it("when every operation's TypeScript code sample is type-checked, then all of them pass", async () => {
    const samples = Object.values(contract.paths).flatMap((item) =>
      Object.values(item).flatMap((operation) => operation['x-codeSamples'].filter((s) => s.lang === 'TypeScript').map((s) => [operation.operationId, s.source] as const)),
    );
    expect(samples).toHaveLength(61);
    mkdirSync(join(project, 'samples'));
    for (const [operationId, source] of samples) writeFileSync(join(project, 'samples', `${operationId}.ts`), source);
    // The samples read credentials from the environment, as a Node program does.
    writeFileSync(join(project, 'samples', 'node.d.ts'), 'declare const process: { env: Record<string, string | undefined> };\n');
    writeFileSync(join(project, 'samples.json'), JSON.stringify({ compilerOptions: { ...COMMON, module: 'NodeNext', moduleResolution: 'NodeNext', noEmit: true }, include: ['samples'] }));

    const { code, output } = await typeCheck(project, 'samples.json');

    expect(output).toBe('');
    expect(code).toBe(0);
  });

  it("when the installed package's evaluateConfig is run on the server's config, then it answers as POST …/evaluate does", async () => {
    // Arrange: a team with a running experiment and flags of every kind of rule.
    const team = await server().newTeam();
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'checkout_test', event: 'purchase', coverage: 80 } });
    for (const key of ['control', 'treatment']) {
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'checkout_test' } }, body: { key, control: key === 'control' } });
    }
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'checkout_test' } } });
    await team.api.POST('/api/teams/{team}/features', {
      params: { path },
      body: {
        key: 'checkout',
        enabled: true,
        value: 'classic',
        rules: [
          { type: 'force', conditions: { country: 'DE', age: { $gte: 18 } }, value: 'german' },
          { type: 'experiment', experiment: 'checkout_test', variants: { treatment: 'one_page' } },
          { type: 'rollout', percentage: 25, value: 'some' },
        ],
      },
    });
    const config = (await team.ingest.GET('/api/teams/{team}/config', { params: { path } })).data!.data;
    const participants = Array.from({ length: 30 }, (_, i) => ({ key: `visitor-${i}`, attributes: { country: i % 2 ? 'DE' : 'FR', age: 10 + i } }));
    const remote = [];
    for (const p of participants) {
      const { data } = await team.ingest.POST('/api/teams/{team}/evaluate', { params: { path }, body: { participant: p.key, attributes: p.attributes } });
      remote.push(data!.data);
    }
    // Act: the installed package, in a process of the consumer's project.
    writeFileSync(join(project, 'evaluate.mjs'), `import { evaluateConfig } from 'experimentation-api';
const { config, participants } = JSON.parse(process.argv[2]);
console.log(JSON.stringify(participants.map((p) => evaluateConfig(config, p))));
`);
    const { stdout } = await run(process.execPath, [join(project, 'evaluate.mjs'), JSON.stringify({ config, participants })], { cwd: project });
    // Assert
    expect(JSON.parse(stdout)).toEqual(remote);
    // The force rule (index 0) serves the adults in Germany whatever the experiment's random seed; the others spread over the rest.
    const rules = new Set(remote.map((r) => r.features.checkout?.rule));
    expect(rules.has(0)).toBe(true);
    expect(rules.size).toBeGreaterThanOrEqual(3);
  });

  it('when the compiled program runs against the real server, then its calls succeed as typed', async () => {
    const { stdout } = await run(process.execPath, [join(project, 'out/main.js')], { cwd: project });

    expect(JSON.parse(stdout)).toEqual({
      version: contract.info.version,
      event: 'signed_up',
      experiment: 'draft',
      variants: [['control', 'treatment']],
      assignments: [['welcome', expect.stringMatching(/^(control|treatment)$/)]],
      refused: [403, 'Forbidden'],
      evaluated: [expect.stringMatching(/^(control|treatment)$/), true],
      // The SDK's exposure of user-7 and its event, both stored, nothing reported.
      sdk: [expect.stringMatching(/^(control|treatment)$/), 2, []],
    });
  });
});
