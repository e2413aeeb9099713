// Every page of the console in Chromium: what a team stored — script tags included — shown as
// text, never run; axe-core finds no serious or critical violation; nothing scrolls sideways on a
// 390 px phone; each page is photographed at 1280 and 390 px — into docs/console/ for
// docs/console.md when CONSOLE_SCREENSHOTS=1, else into a scratch folder, so a test run leaves the
// tracked pictures alone.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setQuota } from '../../server/admin/service';
import { expectAccessible, hasChromium, launch, overflows, signIn, watchedPage } from '../support/console';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

const SCRIPT = '<script>alert("stored")</script><img src=x onerror=alert(1)>';
const shots = process.env.CONSOLE_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../docs/console/', import.meta.url)) : `${mkdtempSync(join(tmpdir(), 'console-shots-'))}/`;

/** Each page, by its hash, and what shows it is drawn. */
const PAGES = [
  ['experiments', '#/experiments', 'table.list tbody tr'],
  ['experiment', '#/experiments/checkout', 'section.results[data-drawn] svg.sequence'],
  ['flags', '#/flags', 'table.list tbody tr'],
  ['flag', '#/flags/banner', 'ol.rules li'],
  ['events', '#/events', 'li[data-event]'],
  ['participants', '#/participants/visitor-1', 'section[data-participant]'],
  ['team', '#/team', 'details summary'],
] as const;

describe.skipIf(!hasChromium).each(engines)('the console, page by page on %s', (engine) => {
  const server = useServer(engine);
  let browser: Browser;
  let team: TestTeam;

  beforeAll(async () => {
    team = await server().newTeam(`Team ${SCRIPT}`);
    const path = { team: team.id };
    const steps = [
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase', description: SCRIPT } }),
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'checkout', event: 'purchase', description: SCRIPT, conditions: { country: SCRIPT } } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'checkout' } }, body: { key: 'control', control: true, description: SCRIPT } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'checkout' } }, body: { key: 'treatment', description: SCRIPT } }),
      await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { ...path, experiment: 'checkout' } }, body: { conditions: {} } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'checkout' } } }),
      await team.api.POST('/api/teams/{team}/features', {
        params: { path },
        body: { key: 'banner', enabled: true, value: SCRIPT, description: SCRIPT, rules: [{ type: 'force', conditions: { plan: SCRIPT }, value: SCRIPT }] },
      }),
      await team.ingest.POST('/api/teams/{team}/ingest/batch', {
        params: { path },
        body: {
          items: Array.from({ length: 40 }, (_, i) => ({ participant: { key: `visitor-${i}`, notes: SCRIPT, attributes: { name: SCRIPT } }, experiment: 'checkout', ...(i % 4 === 0 && { event: 'purchase' }) })),
        },
      }),
    ];
    for (const step of steps) expect(step.response.status, step.response.url).toBe(200);
    await setQuota(server().storage.db, team.id, 1000);
    browser = await launch();
  }, 180_000);
  afterAll(async () => void (await browser?.close()));

  it.each([1280, 390])('at %i px, every page shows the stored script as text, runs none of it, has no serious accessibility violation and does not scroll sideways', async (width) => {
    const { page, problems } = await watchedPage(browser, width);
    await signIn(page, server().baseUrl, team.token);
    mkdirSync(shots, { recursive: true });
    for (const [name, hash, drawn] of PAGES) {
      await page.goto(`${server().baseUrl}/console${hash}`);
      await page.locator(drawn).first().waitFor();
      // The only script is the console's own; the stored markup is text
      expect(await page.locator('script').count(), name).toBe(1);
      expect(await page.locator('#app img').count(), name).toBe(0);
      if (name !== 'team' && name !== 'flag') expect(await page.locator('#main').innerText(), name).toContain('<script>alert("stored")</script>');
      // Open the collapsed parts, so that they are checked too
      await page.evaluate("document.querySelectorAll('#main details').forEach((details) => { details.open = true; })");
      await expectAccessible(page, `${name} at ${width} px`);
      expect(await overflows(page), `${name} at ${width} px`).toEqual({ sideways: 0, outside: [] });
      await page.screenshot({ path: `${shots}${name}-${width}.png`, fullPage: width === 390 ? false : true });
    }
    // The team page says how much of the quota the month has used
    await page.goto(`${server().baseUrl}/console#/team`);
    await page.locator('#quota-used').waitFor();
    expect(await page.locator('#main').innerText()).toContain('40 of 1,000 accepted ingests used this calendar month');
    expect(await page.locator('#quota-used').getAttribute('value')).toBe('40');
    // The stored values in editable fields are the text too
    await page.goto(`${server().baseUrl}/console#/flags/banner`);
    expect(await page.locator('.field[data-path="/body/value"] input').inputValue()).toBe(SCRIPT);
    expect(await page.locator('.field[data-path="/body/rules/0/value"] input').inputValue()).toBe(SCRIPT);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when the sign-in page is checked, then it is accessible too, and a wrong token is said at its field', async () => {
    const { page } = await watchedPage(browser, 390);
    await page.goto(`${server().baseUrl}/console`);
    await expectAccessible(page, 'sign-in');
    await page.getByLabel('API token').fill('est_not_a_token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#token-problem').waitFor();
    expect(await page.locator('#token-problem').innerText()).toMatch(/not valid/);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.screenshot({ path: `${shots}sign-in-390.png` });
    await page.close();
  });
});
