// A flag's rule changed in the console reaches an SDK that streams the config, with no reload of
// the SDK's own; and every form of the flag shows the contract's problems at their field.
import { createClient } from 'experimentation-api/sdk';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch, signIn, watchedPage } from '../support/console';
import { engines } from '../support/engines';
import { useServer } from '../support/server';

describe.skipIf(!hasChromium).each(engines)('a flag rule flipped in the console on %s', (engine) => {
  const server = useServer(engine);
  let browser: Browser;
  beforeAll(async () => void (browser = await launch()));
  afterAll(async () => void (await browser?.close()));

  it('when a person changes the value a rule serves, then a streaming SDK serves the new one', async () => {
    const team = await server().newTeam('Flags');
    const created = await team.api.POST('/api/teams/{team}/features', {
      params: { path: { team: team.id } },
      body: { key: 'banner', enabled: true, value: 'old', rules: [{ type: 'force', conditions: { country: 'DE' }, value: 'german' }] },
    });
    expect(created.response.status).toBe(200);
    const sdk = createClient({ baseUrl: server().baseUrl, team: team.id, ingestKey: team.ingestKey, stream: true, pollIntervalMs: 3_600_000 });
    try {
      await sdk.ready();
      expect(sdk.feature('banner', 'visitor-1', { country: 'DE' })).toBe('german');
      const { page, problems } = await watchedPage(browser);
      await signIn(page, server().baseUrl, team.token, '#/flags/banner');

      // A bad share first: the contract's problem shows at the rule's field, nothing is stored
      await page.getByRole('button', { name: 'Add a rollout rule' }).click();
      await page.locator('.field[data-path="/body/rules/1/percentage"] input').fill('150');
      await page.getByRole('button', { name: 'Save flag' }).click();
      await page.locator('.field[data-path="/body/rules/1/percentage"] .field-problem').waitFor();
      await page.getByRole('button', { name: 'Remove rule 2' }).click();

      await page.locator('.field[data-path="/body/rules/0/value"] input').fill('deutsch');
      await page.getByRole('button', { name: 'Save flag' }).click();
      await page.getByRole('status').waitFor();

      await expect.poll(() => sdk.feature('banner', 'visitor-1', { country: 'DE' }), { timeout: 30_000 }).toBe('deutsch');
      expect(sdk.feature('banner', 'visitor-1', { country: 'FR' })).toBe('old');
      // The refused save is logged by the browser as a failed resource (400); nothing else
      expect(problems.filter((problem) => !/status of 400/.test(problem))).toEqual([]);
      await page.close();
    } finally {
      await sdk.close();
    }
  });
});
