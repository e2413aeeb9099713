// The package's web provider as a page uses it, in Debian's headless Chromium: the package's
// openfeature.js and sdk.js as it ships them, and @openfeature/web-sdk bundled for the page as an
// application's bundler would, on a page of another origin than the service's. The page reads a
// flag of every type, hears a flip as CONFIGURATION_CHANGED, and its exposure and event are
// counted in the experiment's results.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchChromium } from '../support/chromium';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { arrangeReasons } from '../support/openfeature';
import { EVENT, EXPERIMENT, FLAG, servedStatistics } from '../support/sdk';
import type { TestTeam } from '../support/team';

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install -y chromium)`);

const resolvePackage = createRequire(import.meta.url).resolve;
const packageDir = dirname(resolvePackage('experimentation-api/sdk'));
const shipped = { '/sdk.js': readFileSync(join(packageDir, 'sdk.js'), 'utf8'), '/openfeature.js': readFileSync(join(packageDir, 'openfeature.js'), 'utf8') };

interface PageOpenFeature {
  read(): Record<string, { value: unknown; reason?: string; variant?: string; flagMetadata: Record<string, unknown> }>;
  flipped: Promise<boolean>;
  track(): void;
  close(): Promise<void>;
}
declare const window: { of: PageOpenFeature };

function pageHtml(baseUrl: string, team: TestTeam, visitor: string): string {
  const options = JSON.stringify({ baseUrl, team: team.id, ingestKey: team.ingestKey, pollIntervalMs: 3_600_000 });
  return `<!doctype html><html><head><title>Shop</title></head><body><script type="module">
import { OpenFeature, ProviderEvents } from './web-sdk.js';
import { ExperimentationWebProvider } from './openfeature.js';
const provider = new ExperimentationWebProvider(${options});
await OpenFeature.setContext({ targetingKey: ${JSON.stringify(visitor)}, plan: 'pro' });
await OpenFeature.setProviderAndWait(provider);
const client = OpenFeature.getClient();
window.of = {
  read: () => ({
    static_bool: client.getBooleanDetails('static_bool', false),
    plan_label: client.getStringDetails('plan_label', 'none'),
    rollout_limit: client.getNumberDetails('rollout_limit', 0),
    layout: client.getObjectDetails('layout', { columns: 1 }),
    banner: client.getStringDetails('${FLAG}', 'none'),
  }),
  flipped: new Promise((resolve) => client.addHandler(ProviderEvents.ConfigurationChanged, () => {
    if (client.getBooleanValue('static_bool', true) === false) resolve(true);
  })),
  track: () => client.track('${EVENT}'),
  close: () => OpenFeature.close(),
};
</script></body></html>`;
}

describe.skipIf(!hasChromium).each(engines)('the OpenFeature web provider in headless Chromium on %s', (engine) => {
  const server = useServer(engine);
  let browser: Browser;
  let webSdk: string;

  beforeAll(async () => {
    const bundled = await build({
      stdin: { contents: "export * from '@openfeature/web-sdk';", resolveDir: import.meta.dirname },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
    });
    webSdk = bundled.outputFiles[0]!.text;
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('when a page reads flags through OpenFeature, then every type answers with its reason, a flip is heard, and its exposure and event are counted', async () => {
    // Arrange: a page at http://localhost:<port>/ talking to the service at http://127.0.0.1:<port> (CORS, as in production).
    const team = await server().newTeam('Shop');
    await arrangeReasons(team);
    const config = (await team.ingest.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } })).data!.data;
    const { evaluateConfig } = await import('experimentation-api');
    const visitor = Array.from({ length: 40 }, (_, i) => `visitor-${i}`).find((key) => evaluateConfig(config, { key, attributes: { plan: 'pro' } }).experiments[EXPERIMENT] === 'treatment')!;
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    const shop = new URL(server().baseUrl);
    shop.hostname = 'localhost';
    await page.route(`${shop.origin}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/') return route.fulfill({ contentType: 'text/html', body: pageHtml(server().baseUrl, team, visitor) });
      if (path === '/web-sdk.js') return route.fulfill({ contentType: 'text/javascript', body: webSdk });
      if (path in shipped) return route.fulfill({ contentType: 'text/javascript', body: shipped[path as keyof typeof shipped] });
      return route.fulfill({ status: 404 });
    });
    await page.goto(`${shop.origin}/`);
    await page.waitForFunction(() => 'of' in window).catch((error) => { throw new Error(`${error}: ${problems.join('; ')}`); });

    // Act
    const read = await page.evaluate(() => window.of.read());
    await page.evaluate(() => window.of.track());
    await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'static_bool' } }, body: { value: 'false' } });
    const flipped = await page.evaluate(() => window.of.flipped);
    await page.evaluate(() => window.of.close());
    await page.close();

    // Assert
    expect(read).toMatchObject({
      static_bool: { value: true, reason: 'STATIC', variant: 'default' },
      plan_label: { value: 'gold', reason: 'TARGETING_MATCH', variant: 'rule_0' },
      rollout_limit: { value: 2.5, reason: 'SPLIT', variant: 'rule_0' },
      layout: { value: { columns: 1 }, reason: 'DISABLED' },
      banner: { value: 'new', reason: 'SPLIT', variant: 'treatment', flagMetadata: { experiment: EXPERIMENT } },
    });
    expect(flipped).toBe(true);
    expect(await servedStatistics(team.api, team.id)).toEqual({ control: { participants: 0, conversions: 0, unique: 0 }, treatment: { participants: 1, conversions: 1, unique: 1 } });
    expect(problems).toEqual([]);
  });
});
