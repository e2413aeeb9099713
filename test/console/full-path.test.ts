// The console's whole path as a person takes it, in Chromium, with no API call of the test's own:
// sign in; create the events and an experiment with two variants, a condition and 50 % coverage;
// start it; traffic comes from an app through the SDK; read the results; stop it.
import { createClient } from 'experimentation-api/sdk';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { hasChromium, launch, openSection, signIn, watchedPage } from '../support/console';

describe.skipIf(!hasChromium).each(engines)('the console on %s', (engine) => {
  const server = useServer(engine);
  let browser: Browser;
  beforeAll(async () => void (browser = await launch()));
  afterAll(async () => void (await browser?.close()));

  it('when a person creates, targets, starts, reads and stops an experiment in it, then each step is stored and the results count the SDK\'s traffic', async () => {
    const team = await server().newTeam('Full path');
    const { page, problems, requests } = await watchedPage(browser);

    await signIn(page, server().baseUrl, team.token);
    // The token is kept for the tab only, and never put in a URL
    expect(await page.evaluate("[sessionStorage.getItem('experimentation.token'), localStorage.length]")).toEqual([team.token, 0]);

    // The events: a goal and a guardrail
    await openSection(page, 'Events');
    for (const [key, type] of [['signed_up', 'unique'], ['refund', 'count']] as const) {
      const create = page.locator('details.create');
      if ((await create.getAttribute('open')) === null) await create.locator('summary').click();
      await create.getByLabel('Key').fill(key);
      await create.getByLabel('Type').selectOption(type);
      await create.getByRole('button', { name: 'Create event' }).click();
      await page.locator(`li[data-event=${key}]`).waitFor();
    }

    // The experiment, then its variants
    await openSection(page, 'Experiments');
    await page.locator('details.create summary').click();
    await page.locator('details.create').getByLabel('Key').fill('welcome_copy');
    await page.locator('details.create').getByLabel('Goal event').selectOption('signed_up');
    await page.getByRole('button', { name: 'Create experiment' }).click();
    await page.getByRole('heading', { name: /welcome_copy/ }).waitFor();
    const addVariant = page.locator('form.add-variant');
    await addVariant.getByLabel('Variant key').fill('control');
    await addVariant.getByRole('button', { name: 'Add variant' }).click();
    await page.locator('tr[data-variant=control]').waitFor();
    await addVariant.getByLabel('Variant key').fill('friendly');
    await addVariant.getByRole('checkbox').uncheck();
    await addVariant.getByRole('button', { name: 'Add variant' }).click();
    await page.locator('tr[data-variant=friendly]').waitFor();

    // Targeting: German visitors, half of them; refunds as a guardrail
    const settings = page.locator('form.settings');
    await settings.getByRole('button', { name: 'Add a condition' }).click();
    await settings.getByLabel('Attribute').fill('country');
    await settings.getByLabel('Value', { exact: true }).fill('DE');
    await expect.poll(() => settings.getByLabel('Condition as JSON').inputValue()).toBe(JSON.stringify({ country: 'DE' }, null, 2));
    await settings.getByLabel('Coverage (%)').fill('50');
    await settings.getByLabel('Guardrail events').fill('refund');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByRole('status').or(settings.getByRole('alert')).waitFor();
    expect(await settings.getByRole('alert').count(), await settings.innerText()).toBe(0);

    // Start, behind a confirmation that says what happens
    await page.getByRole('button', { name: 'Start' }).click();
    const confirm = page.getByRole('dialog', { name: 'Start welcome_copy?' });
    expect(await confirm.innerText()).toMatch(/50 % of those its targeting admits/);
    await confirm.getByRole('button', { name: 'Start' }).click();
    await page.locator('h1 .status[data-status=running]').waitFor();

    // An app's traffic through the SDK: 300 visitors, half of them German; a third of those who get a variant sign up
    const sdk = createClient({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey, stream: false });
    await sdk.ready();
    const seen = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const visitor = `visitor-${i}`;
      const variant = sdk.experiment('welcome_copy', visitor, { country: i % 2 === 0 ? 'DE' : 'FR' });
      if (variant === null) continue;
      seen.set(variant, (seen.get(variant) ?? 0) + 1);
      if (i % 3 === 0) sdk.track(visitor, 'signed_up');
    }
    await sdk.close();
    const assigned = [...seen.values()].reduce((a, b) => a + b, 0);
    // Only Germans, and about half of them
    expect(assigned).toBeGreaterThan(40);
    expect(assigned).toBeLessThan(110);

    // The results, as the console reads them
    await page.reload();
    const goal = page.locator('article.event[data-event=signed_up]');
    await goal.waitFor();
    expect(await page.locator('dl.summary dd').nth(1).innerText()).toBe(String(assigned));
    for (const [variant, count] of seen) expect(await goal.locator(`tr[data-variant=${variant}] td[data-label=participants]`).innerText()).toBe(String(count));
    // The goal first, then the guardrail
    expect(await page.locator('article.event').evaluateAll((articles) => articles.map((a) => a.getAttribute('data-role')))).toEqual(['goal', 'guardrail']);
    expect(await goal.locator('.verdict-lines li').count()).toBe(1);

    // Stop
    await page.getByRole('button', { name: 'Stop' }).click();
    const stop = page.getByRole('dialog', { name: 'Stop welcome_copy?' });
    expect(await stop.innerText()).toMatch(/cannot be started again/);
    await stop.getByRole('button', { name: 'Stop' }).click();
    await page.locator('h1 .status[data-status=stopped]').waitFor();

    // The list shows it at a glance
    await openSection(page, 'Experiments');
    const row = page.locator('tbody tr', { hasText: 'welcome_copy' });
    await expect.poll(() => row.locator('td[data-label=participants]').innerText()).toBe(String(assigned));
    expect(await row.locator('td[data-label=status]').innerText()).toBe('stopped');
    expect(await row.locator('td[data-label=goal]').innerText()).toBe('signed_up');

    expect(requests.every((url) => url.startsWith(server().baseUrl) && !url.includes(team.token))).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });
});
