import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../support/engines';

/**
 * The rendered reference at /docs, in Debian's headless Chromium, and the bundled document at
 * /openapi.json. Neither depends on the storage engine, so this runs on SQLite only.
 */

const CHROMIUM = '/usr/bin/chromium';
const root = fileURLToPath(new URL('../../', import.meta.url));
const docsFile = `${root}dist/docs/index.html`;
const spec = JSON.parse(readFileSync(`${root}generated/openapi.json`, 'utf8')) as {
  paths: Record<string, Record<string, { operationId: string; summary: string }>>;
};
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
  METHODS.filter((method) => item[method]).map((method) => ({ method, path, ...item[method] })),
);

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install -y chromium)`);
  console.warn(`\n[notice] ${CHROMIUM} is not installed: the /docs browser test is skipped (apt-get install -y chromium).\n`);
}

describe('GET /changelog', () => {
  const server = useServer('sqlite');

  it('when it is fetched, then it is CHANGELOG.md as text', async () => {
    const response = await fetch(`${server().baseUrl}/changelog`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; charset=utf-8/);
    expect(await response.text()).toBe(readFileSync(`${root}CHANGELOG.md`, 'utf8'));
  });
});

describe('GET /openapi.json', () => {
  const server = useServer('sqlite');

  it('when it is fetched, then it is the bundled document with its 40 operations', async () => {
    const response = await fetch(`${server().baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const served = (await response.json()) as typeof spec;
    expect(served).toEqual(spec);
    const count = Object.values(served.paths).flatMap((item) => METHODS.filter((method) => item[method])).length;
    expect(count).toBe(40);
  });
});

describe.skipIf(!hasChromium)('GET /docs in headless Chromium', () => {
  const server = useServer('sqlite');
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(docsFile)) execFileSync('npm', ['run', '-s', 'docs'], { cwd: root, stdio: 'inherit' });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('when the page is opened, then every operation is listed and nothing is loaded from outside localhost', async () => {
    const page = await browser.newPage();
    const requests: string[] = [];
    const blockedByPolicy = new Set<string>(); // refused by the page's CSP inside the browser: never sent
    const failures: string[] = [];
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('request', (request) => void requests.push(request.url()));
    page.on('requestfailed', (request) => {
      if (request.failure()?.errorText === 'csp') blockedByPolicy.add(request.url());
    });
    page.on('pageerror', (error) => void failures.push(error.message));

    const response = await page.goto(`${server().baseUrl}/docs`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-type']).toMatch(/^text\/html/);
    expect(response?.headers()['content-security-policy']).toMatch(/default-src 'self'/);

    // Rendered: the sidebar lists the tags as groups; expanding each lists its operations.
    const menu = page.locator('[data-component-name="Menu/Menu"]').first();
    await menu.waitFor({ timeout: 60_000 });
    await expect.poll(() => menu.innerText()).toContain('Experimentation Service API');
    const groups = menu.locator('[data-component-name="Menu/MenuItem"].menu-item-type-group > a');
    await expect.poll(() => groups.count()).toBe(8);
    const listed = new Map<string, string>(); // operationId (from the item's link) → the item's text
    for (let i = 0; i < (await groups.count()); i++) {
      await groups.nth(i).click();
      const items = menu.locator('[data-component-name="Menu/MenuItem"].menu-item-type-operation');
      await items.first().waitFor();
      for (const [href, text] of await items.evaluateAll((elements) =>
        elements.map((element) => [element.querySelector('a')?.getAttribute('href') ?? '', (element as unknown as { innerText: string }).innerText]),
      )) {
        listed.set(href.split('/').pop()!, text.replace(/\s+/g, ' ').trim());
      }
    }
    expect([...listed.keys()].sort()).toEqual(operations.map((op) => op.operationId).sort());
    for (const op of operations) {
      expect(listed.get(op.operationId), op.operationId).toContain(op.summary);
      expect(listed.get(op.operationId), op.operationId).toContain(op.method.toUpperCase());
    }
    expect(listed.size).toBe(40);

    // Opening an operation renders its method and path, and its code samples.
    await page.locator('[data-component-name="Menu/MenuItem"].menu-item-type-operation a[href$="/ingest"]').first().click();
    await expect.poll(() => page.locator('body').innerText()).toContain('/api/teams/{team}/ingest');
    await page.waitForLoadState('networkidle');
    const body = await page.locator('body').innerText();
    expect(body).toContain("curl -X POST 'http://127.0.0.1:3000/api/teams/1/ingest'");
    // The samples are a dropdown: curl first, then TypeScript with the consumer package.
    await page.locator('[data-component-name="Dropdown/Dropdown"] button').filter({ hasText: /^curl$/ }).first().click();
    await page.getByText('TypeScript (experimentation-api)', { exact: true }).first().click();
    await expect.poll(() => page.locator('body').innerText()).toContain("import { createApiClient } from 'experimentation-api';");

    // The description's sections come first in the sidebar, the quickstart leading; the changelog is one of them.
    const sections = (await menu.locator('[data-component-name="Menu/MenuItem"].menu-item-type-default').allInnerTexts()).map((text) => text.trim());
    expect(sections.slice(0, 2)).toEqual(['Experimentation Service API', 'Quickstart']);
    expect(sections.slice(sections.indexOf('Removed operations'), sections.indexOf('Changelog') + 1)).toEqual(['Removed operations', 'Changelog']);
    // The removed operations section shows each of them with what replaces it.
    await menu.locator('[data-component-name="Menu/MenuItem"].menu-item-type-default').filter({ hasText: /^Removed operations$/ }).click();
    await expect.poll(() => page.locator('body').innerText()).toContain('POST /api/teams/{team}/hit');
    const removedRows = await page.locator('table:has(th:text-is("use instead")) tbody tr').allInnerTexts();
    expect(removedRows).toHaveLength(7);
    expect(removedRows.find((row) => row.includes('/enroll'))).toContain('POST /api/teams/{team}/ingest');

    // No image fails to load (Redoc's footer logo is inlined; the page may load nothing from elsewhere).
    // (Expressions run in the page, written as text: this project's TypeScript has no DOM types.)
    await page.waitForFunction('[...document.images].every((image) => image.complete)', undefined, { timeout: 30_000 });
    const broken = await page.evaluate<string[]>('[...document.images].filter((image) => image.naturalWidth === 0).map((image) => image.src.slice(0, 100))');
    expect(await page.evaluate<number>('document.images.length')).toBeGreaterThan(0);
    expect(broken).toEqual([]);

    const sent = requests.filter((url) => !blockedByPolicy.has(url));
    const outside = sent.filter((url) => {
      const { protocol, hostname } = new URL(url);
      if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return false;
      return !['127.0.0.1', 'localhost', '[::1]'].includes(hostname);
    });
    expect(outside).toEqual([]);
    expect(sent.length).toBeGreaterThan(0);
    expect(failures).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it('when the quickstart is opened, then it shows the commands, first on the page (screenshot: dist/docs/quickstart.png)', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server().baseUrl}/docs#section/Quickstart`, { waitUntil: 'load' });
    const heading = page.locator('h1, h2').filter({ hasText: /^Quickstart$/ }).first();
    await heading.waitFor({ timeout: 60_000 });
    const text = await page.locator('body').innerText();
    expect(text).toContain('eval "$(npm run -s admin -- create-team --name Acme --email ada@example.com --shell)"');
    expect(text.indexOf('Quickstart')).toBeLessThan(text.indexOf('Requests and responses'));
    await heading.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${root}dist/docs/quickstart.png` });
    await page.close();
  });
});
