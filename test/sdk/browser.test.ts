import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchChromium } from '../support/chromium';
import { useServer } from '../support/server';
import { arrangeCheckout, EVENT, expectedStatistics, EXPERIMENT, FLAG, note, servedStatistics, type Journal } from '../support/sdk';
import type { TestTeam } from '../support/team';

/**
 * The SDK as a web page uses it, in Debian's headless Chromium: the package's generated/sdk.js
 * (one ESM file with no imports) loaded by a page of another origin than the service's, so that
 * the SDK's requests are CORS requests as in production. The page decides and tracks; the
 * service's statistics, read through the generated client, count what it tracked; a flag flipped
 * through the API reaches the page over its config stream.
 */

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install -y chromium)`);
  console.warn(`\n[notice] ${CHROMIUM} is not installed: the SDK's browser test is skipped (apt-get install -y chromium).\n`);
}

const sdkSource = readFileSync(createRequire(import.meta.url).resolve('experimentation-api/sdk'), 'utf8');

/** What the page's script leaves on `window` for the test to drive. */
interface PageSdk {
  decide(prefix: string, count: number): Promise<Array<{ participant: string; variant: string | null; banner: string | null }>>;
  banner(participant: string): string | null;
  track(participant: string): void;
  flush(): Promise<void>;
  close(): Promise<void>;
  errors: unknown[];
}
declare const window: { sdk: PageSdk };

function pageHtml(baseUrl: string, team: TestTeam): string {
  const options = JSON.stringify({ baseUrl, team: team.id, ingestKey: team.ingestKey, pollIntervalMs: 3_600_000 });
  return `<!doctype html><html><head><title>Shop</title></head><body><script type="module">
import { createClient } from './sdk.js';
const errors = [];
const client = createClient({ ...${options}, onError: (error) => errors.push(error) });
window.sdk = {
  errors,
  async decide(prefix, count) {
    await client.ready();
    return Array.from({ length: count }, (_, i) => {
      const participant = prefix + '-' + i;
      return { participant, variant: client.experiment('${EXPERIMENT}', participant), banner: client.feature('${FLAG}', participant) };
    });
  },
  banner: (participant) => client.feature('${FLAG}', participant),
  track: (participant) => client.track(participant, '${EVENT}'),
  flush: () => client.flush(),
  close: () => client.close(),
};
</script></body></html>`;
}

describe.skipIf(!hasChromium)('the SDK on a page in headless Chromium', () => {
  const server = useServer('sqlite');
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });

  /** A page at http://localhost:<port>/ (the test answers it) talking to the service at http://127.0.0.1:<port>: another origin. */
  async function shopPage(team: TestTeam): Promise<{ page: Page; configRequests: string[]; problems: string[] }> {
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    const problems: string[] = [];
    const configRequests: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('request', (request) => {
      if (request.url().includes('/config') && request.method() !== 'OPTIONS') configRequests.push(`${request.method()} ${new URL(request.url()).pathname.replace(/^.*\/config/, 'config')}`);
    });
    const shop = new URL(server().baseUrl);
    shop.hostname = 'localhost';
    await page.route(`${shop.origin}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/sdk.js') return route.fulfill({ contentType: 'text/javascript', body: sdkSource });
      if (path === '/') return route.fulfill({ contentType: 'text/html', body: pageHtml(server().baseUrl, team) });
      return route.fulfill({ status: 404 });
    });
    await page.goto(`${shop.origin}/`);
    await page.waitForFunction(() => 'sdk' in window);
    return { page, configRequests, problems };
  }

  it('when the page evaluates and tracks through the SDK, then the service counts what it tracked', async () => {
    // Arrange
    const team = await server().newTeam('Shop');
    await arrangeCheckout(team.api, team.id);
    const { page, problems } = await shopPage(team);

    // Act: 300 visitors decided; every third tracked once, every fifth twice.
    const decided = await page.evaluate(() => window.sdk.decide('visitor', 300));
    const journal: Journal = new Map();
    for (const [i, { participant, variant }] of decided.entries()) {
      const tracked = i % 5 === 0 ? 2 : i % 3 === 0 ? 1 : 0;
      note(journal, participant, { variant, tracked });
      for (let t = 0; t < tracked; t++) await page.evaluate((p) => window.sdk.track(p), participant);
    }
    await page.evaluate(() => window.sdk.flush());

    // Assert
    expect(decided.every(({ variant, banner }) => banner === (variant === 'treatment' ? 'new' : 'old'))).toBe(true);
    const expected = expectedStatistics(journal);
    expect(expected.control!.participants).toBeGreaterThan(50);
    expect(expected.treatment!.participants).toBeGreaterThan(50);
    expect(await servedStatistics(team.api, team.id)).toEqual(expected);
    expect(await page.evaluate(() => window.sdk.errors.filter((error) => (error as { kind: string }).kind !== 'config'))).toEqual([]);
    expect(problems).toEqual([]);
    await page.evaluate(() => window.sdk.close());
    await page.close();
  });

  it('when a flag is flipped through the API, then the config stream brings it to the page, with no poll', async () => {
    // Arrange: polls an hour apart, so that only the stream can bring the change in time.
    const team = await server().newTeam('Flip');
    await arrangeCheckout(team.api, team.id);
    const { page, configRequests, problems } = await shopPage(team);
    const treated = (await page.evaluate(() => window.sdk.decide('reader', 100))).find(({ variant }) => variant === 'treatment')!;
    expect(treated.banner).toBe('new');

    // Act
    const updated = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: FLAG } }, body: { enabled: false } });
    expect(updated.response.status).toBe(200);

    // Assert
    await expect.poll(() => page.evaluate((p) => window.sdk.banner(p), treated.participant), { timeout: 10_000 }).toBeNull();
    expect(configRequests).toEqual(['GET config/stream']);
    expect(await page.evaluate(() => window.sdk.errors)).toEqual([]);
    expect(problems).toEqual([]);
    await page.evaluate(() => window.sdk.close());
    await page.close();
  });
});
