// The console by keyboard alone, in Chromium on both engines: switching teams, paging a list no
// request of which asks for more than a page, creating an event, and a confirmation that Escape
// cancels.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTeam } from '../../server/admin/service';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { hasChromium, launch, signIn, watchedPage } from '../support/console';
import type { TestTeam } from '../support/team';

/** Presses Tab until the element has the focus, as a keyboard user reaches it; fails past 200 presses. */
async function tabTo(page: Page, target: Locator): Promise<void> {
  for (let presses = 0; presses < 200; presses++) {
    if (await target.evaluate((element) => element === element.ownerDocument.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${target}`);
}

/** Signs in and works on the first team, whichever the user last had. */
async function signInToFirstTeam(page: Page, baseUrl: string, token: string, hash: string, drawn: string): Promise<void> {
  await signIn(page, baseUrl, token, hash);
  const teams = page.getByLabel('Team', { exact: true });
  if ((await teams.locator('option:checked').innerText()) !== 'First team') {
    // The switch keeps the choice in this tab and reopens the session; a reload at the page wanted
    // opens it once more with that choice, whatever the switch's own reopening was doing.
    await teams.selectOption({ label: 'First team' });
    await page.goto(`${baseUrl}/console${hash}`);
    await page.reload();
  }
  await page.locator(drawn).first().waitFor();
}

describe.skipIf(!hasChromium).each(engines)('the console by keyboard on %s', (engine) => {
  const server = useServer(engine);
  let browser: Browser;
  let team: TestTeam;

  beforeAll(async () => {
    team = await server().newTeam('First team');
    const path = { team: team.id };
    expect((await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'banner', enabled: false } })).response.status).toBe(200);
    for (let i = 0; i < 25; i++) expect((await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: `event_${String(i).padStart(2, '0')}` } })).response.status).toBe(200);
    // The same person in a second team, with an experiment of its own
    const second = await createTeam(server().storage.db, { name: 'Second team', email: team.email });
    const secondPath = { team: second.team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path: secondPath }, body: { key: 'goal' } });
    expect((await team.api.POST('/api/teams/{team}/experiments', { params: { path: secondPath }, body: { key: 'only_in_second', event: 'goal' } })).response.status).toBe(200);
    browser = await launch();
  }, 180_000);
  afterAll(async () => void (await browser?.close()));

  it('when the team is switched with the keyboard, then the pages show the other team\'s resources', async () => {
    const { page, problems } = await watchedPage(browser);
    await signInToFirstTeam(page, server().baseUrl, team.token, '#/experiments', 'h1');
    await page.getByText('No experiments yet').or(page.locator('table.list')).first().waitFor();
    expect(await page.locator('table.list tbody tr', { hasText: 'only_in_second' }).count()).toBe(0);
    const teams = page.getByLabel('Team', { exact: true });
    expect(await teams.locator('option').allInnerTexts()).toEqual(['First team', 'Second team']);
    await tabTo(page, teams);
    await page.keyboard.press('ArrowDown');
    await page.locator('table.list tbody tr', { hasText: 'only_in_second' }).waitFor();
    expect(await teams.inputValue()).not.toBe(String(team.id));
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when a list is longer than a page, then it shows one page, and Next — reached and pressed by keyboard — shows the rest', async () => {
    const { page, problems, requests } = await watchedPage(browser);
    await signInToFirstTeam(page, server().baseUrl, team.token, '#/events', 'li[data-event=event_00]');
    expect(await page.locator('li[data-event]').count()).toBe(20);
    expect(await page.getByRole('navigation', { name: 'Pages' }).innerText()).toContain('Page 1 of 2 (25)');
    await tabTo(page, page.getByRole('button', { name: 'Next' }));
    await page.keyboard.press('Enter');
    await page.locator('li[data-event=event_24]').waitFor();
    expect(await page.locator('li[data-event]').count()).toBe(5);
    // No list is asked for more than a page (the contract's largest is 100)
    const pages = requests.map((url) => new URL(url)).filter((url) => url.searchParams.has('per_page'));
    expect(pages.length).toBeGreaterThan(0);
    expect(pages.every((url) => Number(url.searchParams.get('per_page')) <= 100)).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when an event is created by keyboard alone, then it is stored; a delete\'s confirmation is cancelled by Escape', async () => {
    const { page, problems } = await watchedPage(browser);
    await signInToFirstTeam(page, server().baseUrl, team.token, '#/events', 'li[data-event=event_00]');
    const create = page.locator('details.create');
    await tabTo(page, create.locator('summary'));
    await page.keyboard.press('Enter');
    await tabTo(page, create.getByLabel('Key'));
    await page.keyboard.type('typed_by_keyboard');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await team.api.GET('/api/teams/{team}/events/{event}', { params: { path: { team: team.id, event: 'typed_by_keyboard' } } })).response.status).toBe(200);

    const card = page.locator('li[data-event=event_00]');
    await tabTo(page, card.locator('summary'));
    await page.keyboard.press('Enter');
    await tabTo(page, card.getByRole('button', { name: 'Delete' }));
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    // The dialog opens on its harmless choice, and Escape closes it with nothing deleted
    expect(await dialog.getByRole('button', { name: 'Cancel' }).evaluate((element) => element === element.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await team.api.GET('/api/teams/{team}/events/{event}', { params: { path: { team: team.id, event: 'event_00' } } })).response.status).toBe(200);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when a flag\'s switch in the list is reached with Tab and pressed with Space, then the flag is turned on and off', async () => {
    const { page, problems } = await watchedPage(browser);
    await signInToFirstTeam(page, server().baseUrl, team.token, '#/flags', 'table.list tbody tr');
    const enabled = async () => (await team.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'banner' } } })).data!.data.enabled;
    const toggle = page.getByRole('switch', { name: 'banner on' });
    await tabTo(page, toggle);
    await page.keyboard.press('Space');
    await expect.poll(enabled).toBe(true);
    await expect.poll(() => toggle.isChecked()).toBe(true);
    await page.keyboard.press('Space');
    await expect.poll(enabled).toBe(false);
    expect(problems).toEqual([]);
    await page.close();
  });
});
