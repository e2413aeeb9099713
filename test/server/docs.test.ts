import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Locator } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../support/server';

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

/**
 * Run in the page on an element: the words of its text that a line break cuts in two. Each
 * character's box tells its line; a line must start after a space.
 */
const WORDS_BROKEN_ACROSS_LINES = (element: unknown): string[] => {
  const node = element as { textContent: string; ownerDocument: { createRange(): any; createTreeWalker(root: unknown, filter: number): any } };
  const walker = node.ownerDocument.createTreeWalker(node, 4);
  let text = '';
  const boxes: Array<{ at: number; top: number }> = []; // a space that ends a line has no box
  while (walker.nextNode()) {
    const data = (walker.currentNode as { data: string }).data;
    for (let i = 0; i < data.length; i++) {
      const range = node.ownerDocument.createRange();
      range.setStart(walker.currentNode, i);
      range.setEnd(walker.currentNode, i + 1);
      const box = range.getBoundingClientRect();
      if (box.width > 0) boxes.push({ at: text.length + i, top: Math.round(box.top) });
    }
    text += data;
  }
  const broken: string[] = [];
  for (let i = 1; i < boxes.length; i++) {
    const [before, after] = [boxes[i - 1]!, boxes[i]!];
    if (after.top > before.top && !/\s/.test(text.slice(before.at, after.at + 1))) broken.push(`${text.slice(0, before.at + 1)}|${text.slice(after.at)}`);
  }
  return broken;
};

/** Run in the page on an element: how far its text reaches past the right of its own box (into what is beside it). */
const TEXT_PAST_ITS_BOX = (element: unknown): number => {
  const node = element as { ownerDocument: { createRange(): any }; getBoundingClientRect(): { right: number } };
  const range = node.ownerDocument.createRange();
  range.selectNodeContents(node);
  return Math.round(range.getBoundingClientRect().right - node.getBoundingClientRect().right);
};

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
    expect(response.headers.get('vary')).toMatch(/Accept/);
    expect(await response.text()).toBe(readFileSync(`${root}CHANGELOG.md`, 'utf8'));
  });

  it('when a browser asks for it, then it is a page with an entry per version; the text stays at /changelog.md', async () => {
    if (!existsSync(docsFile)) execFileSync('npm', ['run', '-s', 'docs'], { cwd: root, stdio: 'inherit' });
    const versions = [...readFileSync(`${root}CHANGELOG.md`, 'utf8').matchAll(/^## (.*)$/gm)].map((match) => match[1]!);

    const page = await fetch(`${server().baseUrl}/changelog`, { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    const text = await fetch(`${server().baseUrl}/changelog.md`);

    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    const html = await page.text();
    expect(versions.length).toBeGreaterThan(3);
    expect([...html.matchAll(/<h2>(.*?)<\/h2>/g)].map((match) => match[1])).toEqual(versions);
    expect(html).toContain('<code>GET /api/teams/{team}/experiments/{experiment}/results</code>');
    // Each release opens with its API changes; the entries that change no operation come last, under a heading of their own.
    const internal = /<li>\s*(?:<p>)?<strong>Modification:<\/strong> no operation changes/;
    for (const release of html.split('<h2>').slice(1)) {
      const [api, without] = release.split('<h3>Without API changes</h3>') as [string, string | undefined];
      expect(api).not.toMatch(internal);
      if (without !== undefined) expect(without.split('<li>').slice(1).every((entry) => internal.test(`<li>${entry}`)), release.slice(0, 60)).toBe(true);
    }
    expect(html).toContain('<h3>Without API changes</h3>');
    expect(text.headers.get('content-type')).toMatch(/^text\/plain; charset=utf-8/);
    expect(await text.text()).toBe(readFileSync(`${root}CHANGELOG.md`, 'utf8'));
  });
});

describe('npm run docs (part of npm start)', () => {
  it('when it builds the docs, then it prints nothing: no notices of the tools it runs at every start', async () => {
    const run = spawnSync('npm', ['run', '-s', 'docs'], { cwd: root, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(`${run.stdout}${run.stderr}`).toBe('');
  });
});

describe('GET /', () => {
  const server = useServer('sqlite');

  it('when a newcomer opens the root, or the results page of earlier links, then it leads to the console, a page of its own origin only', async () => {
    for (const path of ['/', '/results']) {
      const response = await fetch(`${server().baseUrl}${path}`, { redirect: 'manual' });
      expect([301, 302], path).toContain(response.status);
      expect(response.headers.get('location'), path).toBe('/console');
    }
    const page = await fetch(`${server().baseUrl}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toBe("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    const assets = [...(await page.text()).matchAll(/(?:href|src)="([^"]+)"/g)].map((match) => match[1]!);
    expect(assets).toEqual(['/console/icon.svg', '/console/console.css', '/console/console.js']);
    for (const asset of assets) expect((await fetch(`${server().baseUrl}${asset}`)).status, asset).toBe(200);
  });
});

describe('GET /openapi.json', () => {
  const server = useServer('sqlite');

  it('when it is fetched, then it is the bundled document with its 61 operations', async () => {
    const response = await fetch(`${server().baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const served = (await response.json()) as typeof spec;
    expect(served).toEqual(spec);
    const count = Object.values(served.paths).flatMap((item) => METHODS.filter((method) => item[method])).length;
    expect(count).toBe(61);
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

    // The title breaks between words only; the servers panel shows no Markdown backticks.
    const title = page.locator('[data-component-name="Typography/H1"]').first();
    await title.waitFor();
    expect(await title.evaluate(WORDS_BROKEN_ACROSS_LINES), 'words broken across lines').toEqual([]);
    expect(await title.evaluate(TEXT_PAST_ITS_BOX), 'pixels of the title past its box').toBeLessThanOrEqual(0);
    const servers = page.locator('[data-component-name="Panel/Panel"]').filter({ has: page.locator('[data-component-name="Panel/PanelHeaderTitle"]', { hasText: /^Servers$/ }) });
    await expect.poll(() => servers.innerText()).toContain('The server that serves this document');
    expect(await servers.innerText()).not.toContain('`');

    // Rendered: the sidebar lists the tags as groups; expanding each lists its operations.
    const menu = page.locator('[data-component-name="Menu/Menu"]').first();
    await menu.waitFor({ timeout: 60_000 });
    await expect.poll(() => menu.innerText()).toContain('Experimentation Service API');
    const groups = menu.locator('[data-component-name="Menu/MenuItem"].menu-item-type-group');
    await expect.poll(() => groups.count()).toBe(11);
    const listed = new Map<string, string>(); // operationId (from the item's link) → the item's text
    const operationHrefs: string[] = [];
    for (let i = 0; i < (await groups.count()); i++) {
      const group = groups.nth(i);
      // The items of this group only, once every one is shown: a collapsed group's items are
      // hidden, and a hidden element's innerText ignores the CSS that upper-cases the method.
      const items = group.locator('[data-component-name="Menu/MenuItem"].menu-item-type-operation');
      await expanded(group, items);
      await expect.poll(() => items.evaluateAll((elements) => elements.every((element) => (element as unknown as { checkVisibility(): boolean }).checkVisibility()))).toBe(true);
      for (const [href, text] of await items.evaluateAll((elements) =>
        elements.map((element) => [element.querySelector('a')?.getAttribute('href') ?? '', (element as unknown as { innerText: string }).innerText]),
      )) {
        listed.set(href.split('/').pop()!, text.replace(/\s+/g, ' ').trim());
        operationHrefs.push(href);
      }
    }
    expect([...listed.keys()].sort()).toEqual(operations.map((op) => op.operationId).sort());
    for (const op of operations) {
      expect(listed.get(op.operationId), op.operationId).toContain(op.summary);
      expect(listed.get(op.operationId), op.operationId).toContain(op.method.toUpperCase());
    }
    expect(listed.size).toBe(61);

    // Every menu link stays in this page (a route in its hash), so one opened in a new tab is
    // this page again, at that entry: not the server's 404 for /section/… or /experiments/….
    // The menu re-renders after the last group opens, and its links come and go while it does:
    // they are checked as one reading found them all, not counted in one reading and read in another.
    let hrefs: string[] = [];
    await expect
      .poll(async () => {
        hrefs = [...(await menu.locator('a').evaluateAll((links) => links.map((link) => link.getAttribute('href') ?? ''))), ...operationHrefs];
        return hrefs.length;
      }, { timeout: 60_000, interval: 250 })
      .toBeGreaterThan(70);
    expect(hrefs.filter((href) => new URL(href, page.url()).pathname !== '/docs')).toEqual([]);
    const resultsHref = hrefs.find((href) => href.endsWith('/experiments_results'))!;
    const tab = await browser.newPage();
    const opened = await tab.goto(new URL(resultsHref, page.url()).href, { waitUntil: 'load' });
    expect(opened?.status()).toBe(200);
    await expect.poll(() => tab.locator('h1, h2').filter({ hasText: operations.find((op) => op.operationId === 'experiments_results')!.summary }).count(), { timeout: 60_000 }).toBeGreaterThan(0);
    await tab.close();

    // Opening an operation renders its method and path, and its code samples.
    // Its group is opened again first: the menu may have folded groups while it re-rendered.
    const ingestGroup = groups.filter({ has: page.locator(':scope > a', { hasText: /^\s*Ingest\s*$/ }) }).first();
    const ingestItem = page.locator('[data-component-name="Menu/MenuItem"].menu-item-type-operation a[href$="/ingest"]').first();
    await expanded(ingestGroup, ingestItem);
    await ingestItem.click();
    await expect.poll(() => page.locator('body').innerText()).toContain('/api/teams/{team}/ingest');
    await page.waitForLoadState('networkidle');
    const body = await page.locator('body').innerText();
    // The samples address the reader's server and team, as the quickstart sets them: no hard-coded host or team.
    expect(body).toContain('curl -X POST "$BASE_URL/api/teams/$TEAM/ingest"');
    expect(body).not.toMatch(/127\.0\.0\.1:3000\/api\/teams\/1/);
    // The samples are a dropdown: curl first, then TypeScript with the consumer package.
    await page.locator('[data-component-name="Dropdown/Dropdown"] button').filter({ hasText: /^curl$/ }).first().click();
    await page.getByText('TypeScript (experimentation-api)', { exact: true }).first().click();
    await expect.poll(() => page.locator('body').innerText()).toContain("import { createApiClient } from 'experimentation-api';");
    expect(await page.locator('body').innerText()).toContain('createApiClient(process.env.BASE_URL!, process.env.INGEST_KEY)');

    // The description's sections come first in the sidebar, the quickstart leading, then the
    // operations' groups, then the changelog as one entry (not one per version); no name twice.
    const sections = (await menu.locator('[data-component-name="Menu/MenuItem"].menu-item-type-default').allInnerTexts()).map((text) => text.trim());
    expect(sections.slice(0, 2)).toEqual(['Experimentation Service API', 'Quickstart']);
    const topLevel = (await menu.locator(':scope > li > [data-component-name="Menu/MenuItem"], :scope > [data-component-name="Menu/MenuItem"]').allInnerTexts()).map((text) => text.split('\n')[0]!.trim());
    const groupNames = (await groups.locator(':scope > a').allInnerTexts()).map((text) => text.trim());
    expect(topLevel.slice(topLevel.indexOf('Removed operations'))).toEqual(['Removed operations', ...groupNames, 'Changelog']);
    expect(topLevel.filter((name, i) => topLevel.indexOf(name) !== i)).toEqual([]);
    expect(sections.filter((name) => /^\d{4}-\d\d-\d\d/.test(name) || /^(Additions|Modifications|Removals)$/.test(name))).toEqual([]);
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

    // On a phone too, the title breaks between words and stays in its box.
    await page.setViewportSize({ width: 390, height: 844 });
    const title = page.locator('[data-component-name="Typography/H1"]').first();
    await title.scrollIntoViewIfNeeded();
    await expect.poll(() => title.evaluate(TEXT_PAST_ITS_BOX), { message: 'pixels of the title past its box' }).toBeLessThanOrEqual(0);
    expect(await title.evaluate(WORDS_BROKEN_ACROSS_LINES)).toEqual([]);
    await page.screenshot({ path: `${root}dist/docs/title-390.png` });
    await page.close();
  });
});

/**
 * Opens a group of the docs' menu unless it is open already: the menu opens the group of the
 * section the page scrolled to by itself, and a click on an open group closes it. Clicked again
 * if its items are still hidden after a while (a click that landed on a group the menu had just
 * opened).
 */
async function expanded(group: Locator, items: Locator): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (await items.first().isVisible()) return;
    await group.locator(':scope > a').click();
    try {
      await items.first().waitFor({ timeout: 10_000 });
      return;
    } catch (error) {
      if (attempt === 5) throw error;
    }
  }
}
