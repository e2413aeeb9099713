// What the console's browser tests share: Debian's Chromium, a page that records what would show
// a problem, signing in as a person does, and the axe-core check.
import { existsSync } from 'node:fs';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install -y chromium)`);
  console.warn(`\n[notice] ${CHROMIUM} is not installed: the console's browser tests are skipped (apt-get install -y chromium).\n`);
}

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
}

export interface WatchedPage {
  page: Page;
  /** Console errors, page errors, failed requests (not those the page cancelled), dialogs (a stored script that ran would open one). */
  problems: string[];
  requests: string[];
}

export async function watchedPage(browser: Browser, width = 1280): Promise<WatchedPage> {
  const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage();
  // Waits are for conditions: a loaded CI machine can take longer than Playwright's default 30 s to draw a page.
  page.setDefaultTimeout(60_000);
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => void problems.push(`page: ${error.message}`));
  // A fetch the page itself cancels (a reload while it is in flight) is not a problem; any other failure is
  page.on('requestfailed', (request) => {
    const reason = request.failure()?.errorText ?? 'unknown';
    if (reason !== 'net::ERR_ABORTED') problems.push(`failed: ${request.url()} (${reason})`);
  });
  page.on('request', (request) => void requests.push(request.url()));
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, problems, requests };
}

/** Opens the server's root, which leads to the console, and signs in with the token as a person types it. */
export async function signIn(page: Page, baseUrl: string, token: string, hash = ''): Promise<void> {
  const response = await page.goto(`${baseUrl}/${hash}`, { waitUntil: 'load' });
  expect(response?.status()).toBe(200);
  expect(page.url()).toBe(`${baseUrl}/console${hash}`);
  expect(response?.headers()['content-security-policy']).toMatch(/script-src 'self'(;|$)/);
  expect(response?.headers()['content-security-policy']).not.toMatch(/unsafe-inline/);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
}

/** axe-core on the page as it is: no violation of serious or critical impact. */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  const grave = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  expect(
    grave.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`),
    what,
  ).toEqual([]);
}

/** What overflows at the current width: the page's sideways scroll, and elements reaching past the viewport. */
export function overflows(page: Page): Promise<{ sideways: number; outside: string[] }> {
  return page.evaluate(`(() => {
    const sideways = document.documentElement.scrollWidth - document.documentElement.clientWidth;
    const width = document.documentElement.clientWidth;
    const outside = [...document.querySelectorAll('#app *')]
      .filter((node) => !node.closest('.table') && !node.closest('dialog:not([open])') && node.getBoundingClientRect().right > width + 0.5)
      .map((node) => node.tagName + (node.className ? '.' + node.className : ''));
    return { sideways, outside };
  })()`) as Promise<{ sideways: number; outside: string[] }>;
}

/** Opens a section of the console from its menu, as a person does. */
export async function openSection(page: Page, name: 'Experiments' | 'Flags' | 'Events' | 'Participants' | 'Team'): Promise<void> {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { level: 1 }).first().waitFor();
}
