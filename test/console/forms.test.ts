// Every form of the console, sent with what the contract refuses: the problem shows at the field it
// names (not only in a banner), and nothing is stored. JSON the console cannot parse is never
// sent: saving would store the last valid value instead of what the field shows.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { hasChromium, launch, signIn, watchedPage } from '../support/console';
import type { TestTeam } from '../support/team';

/** The problem shown under a field, once the form's answer has come. */
async function problemAt(scope: Locator, path: string): Promise<string> {
  const shown = scope.locator(`.field[data-path="${path}"] .field-problem`);
  await shown.waitFor();
  return shown.innerText();
}

/** Requests of a method to a path, from now on. */
function sent(page: Page, method: string, path: RegExp): string[] {
  const seen: string[] = [];
  page.on('request', (request) => void (request.method() === method && path.test(new URL(request.url()).pathname) && seen.push(request.url())));
  return seen;
}

describe.skipIf(!hasChromium).each(engines)('the console\'s forms on %s', (engine) => {
  const server = useServer(engine);
  let browser: Browser;
  let team: TestTeam;
  let page: Page;
  let problems: string[];
  /** A page drawn afresh (the tab keeps its sign-in), so no earlier test's answer is still shown. */
  const go = async (hash: string, drawn: string) => {
    await page.goto(`${server().baseUrl}/console${hash}`);
    await page.reload();
    await page.locator(drawn).first().waitFor();
  };
  const stored = async (path: string) => (await fetch(`${server().baseUrl}/api/teams/${team.id}${path}`, { headers: { authorization: `Bearer ${team.token}` } })).json() as Promise<{ data: Record<string, unknown> }>;

  beforeAll(async () => {
    team = await server().newTeam('Forms');
    const path = { team: team.id };
    const steps = [
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } }),
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'draft_exp', event: 'purchase' } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'draft_exp' } }, body: { key: 'control', control: true } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'draft_exp' } }, body: { key: 'treatment' } }),
      await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'banner', enabled: true, value: 'off', rules: [{ type: 'rollout', percentage: 10, value: 'on' }] } }),
    ];
    for (const step of steps) expect(step.response.status, step.response.url).toBe(200);
    browser = await launch();
    ({ page, problems } = await watchedPage(browser));
    await signIn(page, server().baseUrl, team.token);
  }, 180_000);
  afterAll(async () => void (await browser?.close()));

  it('when a new experiment has a key the contract refuses, then the key field says why and nothing is created', async () => {
    await go('#/experiments', 'details.create');
    const form = page.locator('details.create');
    await form.locator('summary').click();
    await form.getByLabel('Key').fill('Bad Key');
    await form.getByLabel('Goal event').selectOption('purchase');
    await form.getByRole('button', { name: 'Create experiment' }).click();
    expect(await problemAt(form, '/body/key')).toMatch(/pattern|must match/i);
    expect((await team.api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id } } })).data!.data.map((e) => e.key)).toEqual(['draft_exp']);
  });

  it('when an experiment\'s coverage is past 100 %, then the coverage field says why and the stored coverage stays', async () => {
    await go('#/experiments/draft_exp', 'form.settings');
    const form = page.locator('form.settings');
    await form.getByLabel('Coverage (%)').fill('150');
    await form.getByRole('button', { name: 'Save settings' }).click();
    expect(await problemAt(form, '/body/coverage')).toMatch(/100/);
    expect((await stored('/experiments/draft_exp')).data.coverage).toBe(100);
  });

  it('when a variant is added with a share past 100 %, then the share field says why', async () => {
    await go('#/experiments/draft_exp', 'form.add-variant');
    const form = page.locator('form.add-variant');
    await form.getByLabel('Variant key').fill('third');
    await form.getByLabel(/Share in percent/).fill('150');
    await form.getByRole('button', { name: 'Add variant' }).click();
    expect(await problemAt(form, '/body/traffic')).toMatch(/100/);
    expect(await page.locator('tr[data-variant=third]').count()).toBe(0);
  });

  it('when a variant\'s share is set past 100 % in its row, then the problem shows in that row, not at the form for a new variant', async () => {
    await go('#/experiments/draft_exp', 'tr[data-variant=treatment]');
    const row = page.locator('tr[data-variant=treatment]');
    await row.getByLabel('Share of treatment in percent').fill('150');
    await row.getByRole('button', { name: 'Set share' }).click();
    await row.locator('.field-problem').waitFor();
    expect(await row.locator('.field-problem').innerText()).toMatch(/100/);
    expect(await row.getByLabel('Share of treatment in percent').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('form.add-variant .field-problem').count()).toBe(0);
  });

  it('when an event\'s cap is not a number or is refused, then the cap field says why and nothing is sent or stored', async () => {
    await go('#/events', 'details.create');
    const form = page.locator('details.create');
    await form.locator('summary').click();
    const posts = sent(page, 'POST', /\/events$/);
    await form.getByLabel('Key').fill('checkout');
    await form.getByLabel('Cap').fill('lots');
    await form.getByRole('button', { name: 'Create event' }).click();
    expect(await problemAt(form, '/body/cap')).toContain('not a number');
    expect(posts).toEqual([]);
    await form.getByLabel('Cap').fill('-1');
    await form.getByRole('button', { name: 'Create event' }).click();
    await expect.poll(() => posts.length).toBe(1);
    await expect.poll(() => form.locator('.field[data-path="/body/cap"] .field-problem').innerText()).toMatch(/greater|minimum|>/i);
    // Editing an existing event: a cap with more decimals than stored
    const edit = page.locator('li[data-event=purchase]');
    await edit.locator('summary').click();
    await edit.getByLabel('Cap').fill('1.1234567');
    await edit.getByRole('button', { name: 'Save event' }).click();
    expect(await problemAt(edit, '/body/cap')).not.toBe('');
    expect((await stored('/events/purchase')).data.cap).toBeNull();
    expect((await stored('/events/checkout')).data).toBeUndefined();
  });

  it('when a new flag has a key the contract refuses, then the key field says why', async () => {
    await go('#/flags', 'details.create');
    const form = page.locator('details.create');
    await form.locator('summary').click();
    await form.getByLabel('Key').fill('bad key');
    await form.getByRole('button', { name: 'Create flag' }).click();
    expect(await problemAt(form, '/body/key')).toMatch(/pattern|must match/i);
  });

  it('when a flag rule\'s share is past 100 %, then the rule\'s field says why; when its condition is not JSON, then nothing is sent', async () => {
    await go('#/flags/banner', 'ol.rules li');
    const rule = page.locator('ol.rules li[data-rule="0"]');
    await rule.getByLabel('To this share of participants (%)').fill('150');
    await page.getByRole('button', { name: 'Save flag' }).click();
    expect(await problemAt(rule, '/body/rules/0/percentage')).toMatch(/100/);

    await go('#/flags/banner', 'ol.rules li');
    const puts = sent(page, 'PUT', /\/features\/banner$/);
    await rule.getByLabel('Condition as JSON').fill('{"country": ');
    await page.getByRole('button', { name: 'Save flag' }).click();
    await rule.locator('fieldset.conditions .field-problem').waitFor();
    expect(await rule.getByLabel('Condition as JSON').evaluate((field) => (field as unknown as { validity: { valid: boolean } }).validity.valid)).toBe(false);
    // Nothing is sent: the stored rule keeps its share and has no condition
    await page.getByRole('button', { name: 'Save flag' }).click();
    expect(puts).toEqual([]);
    expect((await stored('/features/banner')).data.rules).toEqual([expect.objectContaining({ percentage: 10 })]);
    expect(((await stored('/features/banner')).data.rules as Array<Record<string, unknown>>)[0]!.conditions ?? {}).toEqual({});
  });

  it('when a participant is tried with attributes that are not an object, then the attributes field says why', async () => {
    await go('#/flags/banner', '#try-title');
    const form = page.locator('section[aria-labelledby=try-title] form');
    await form.getByLabel('Attributes (JSON)').fill('{nope');
    await form.getByRole('button', { name: 'Evaluate' }).click();
    expect(await problemAt(form, '/body/attributes')).toContain('not JSON');
    await form.getByLabel('Attributes (JSON)').fill('[1, 2]');
    await form.getByRole('button', { name: 'Evaluate' }).click();
    await expect.poll(() => form.locator('.field[data-path="/body/attributes"] .field-problem').innerText()).toMatch(/object/);
  });

  it('when a participant that does not exist is looked up, then the page says it is not found', async () => {
    await go('#/participants', 'form.lookup');
    await page.getByLabel('Participant key').fill('nobody-here');
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.locator('.problem[role=alert]').waitFor();
    expect(await page.locator('.problem[role=alert]').innerText()).toMatch(/not found/i);
    // Refusals are logged by the browser and reloads cancel requests; no script error, no dialog
    expect(problems.filter((line) => /^(page|dialog):/.test(line))).toEqual([]);
  });
});
