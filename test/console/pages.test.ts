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
import { checkRollouts } from '../../server/rollouts/watcher';
import { expectAccessible, hasChromium, launch, overflows, signIn, watchedPage } from '../support/console';
import { engines } from '../support/engines';
import { participantsInArm } from '../support/rollout-arms';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

const SCRIPT = '<script>alert("stored")</script><img src=x onerror=alert(1)>';
const shots = process.env.CONSOLE_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../docs/console/', import.meta.url)) : `${mkdtempSync(join(tmpdir(), 'console-shots-'))}/`;

/** Each page, by its hash, and what shows it is drawn. */
const PAGES = [
  ['experiments', '#/experiments', 'table.list tbody tr'],
  ['experiment', '#/experiments/checkout', 'section.results[data-drawn] svg.sequence'],
  ['flags', '#/flags', 'table.list tbody tr'],
  ['flag', '#/flags/banner', 'section.rollouts[data-drawn] article[data-rollout]'],
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
    await exposeRollouts(team);
    await harmRollout(team);
    await skewRollout(team);
    const acted = await checkRollouts(server().storage);
    expect(acted.map((a) => a.action).sort()).toEqual(['held', 'rolled_back']);
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
    expect(await page.locator('#main').innerText()).toContain('440 of 1,000 accepted ingests used this calendar month');
    expect(await page.locator('#quota-used').getAttribute('value')).toBe('440');
    // The stored values in editable fields are the text too
    await page.goto(`${server().baseUrl}/console#/flags/banner`);
    expect(await page.locator('.field[data-path="/body/value"] input').inputValue()).toBe(SCRIPT);
    expect(await page.locator('.field[data-path="/body/rules/0/value"] input').inputValue()).toBe(SCRIPT);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("when a flag has safe rollouts, then its page shows each one's state, share, exposures, readings, rollback and steps, and its actions work from the keyboard", async () => {
    const { page, problems } = await watchedPage(browser, 390);
    await signIn(page, server().baseUrl, team.token, '#/flags/banner');
    const running = page.locator('article[data-rollout="2"]');
    await running.waitFor();
    const text = await running.innerText();
    expect(text).toContain(SCRIPT);
    expect(text).toMatch(/state\s+running/);
    expect(text).toMatch(/step\s+1 of 2/);
    expect(text).toMatch(/share\s+50\u00a0% in each arm/);
    const exposures = (await team.api.GET('/api/teams/{team}/features/{feature}/rollouts/{rollout}', { params: { path: { team: team.id, feature: 'banner', rollout: '2' } } })).data!.data.exposures;
    expect(exposures.new + exposures.current).toBe(40);
    expect(text).toMatch(new RegExp(`exposed, new value\\s+${exposures.new}`));
    expect(text).toMatch(new RegExp(`exposed, current value\\s+${exposures.current}`));
    const reading = running.locator('tr[data-guardrail="purchase"]');
    expect(await reading.getAttribute('data-harmed')).toBe('false');
    // The cells at 390 px: the guardrail, each arm's rate, new − current and its always-valid interval, the Holm-adjusted p toward harm, the verdict
    expect(await reading.innerText()).toMatch(/^purchase\n[\d.]+\u00a0%\n[\d.]+\u00a0%\n[−+]?[\d.]+\u00a0pp\n[−+]?[\d.]+\u00a0pp … [−+]?[\d.]+\u00a0pp\n[\d.]+\nnot harmed$/);
    expect(await running.locator('[data-hold]').count()).toBe(0);
    await running.locator('details.steps summary').focus();
    await page.keyboard.press('Enter');
    expect(await running.locator('li[data-step]').allInnerTexts()).toEqual([expect.stringMatching(/^50\u00a0% from \d{4}-\d\d-\d\d \d\d:\d\d UTC$/)]);
    expect(await page.locator('article[data-rollout="1"] [data-rollback="manual"]').innerText()).toMatch(/^Rolled back by hand at \d{4}-\d\d-\d\d \d\d:\d\d UTC\.$/);
    // Paused and resumed from the keyboard: the state follows
    await running.getByRole('button', { name: 'Pause rollout 2' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('article[data-rollout="2"][data-state="paused"]').waitFor();
    await running.getByRole('button', { name: 'Resume rollout 2' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('article[data-rollout="2"][data-state="running"]').waitFor();
    // A rollback the service decided: the harmed guardrail, its effect and interval
    await page.goto(`${server().baseUrl}/console#/flags/risky`);
    const rolledBack = page.locator('article[data-rollout="1"][data-state="rolled_back"]');
    await rolledBack.waitFor();
    expect(await rolledBack.locator('[data-rollback="guardrail"]').innerText()).toMatch(
      /^Rolled back at \d{4}-\d\d-\d\d \d\d:\d\d UTC: checkout_error was harmed, new − current \+[\d.]+\u00a0pp \(always-valid interval \+[\d.]+\u00a0pp … \+[\d.]+\u00a0pp\)\.$/,
    );
    expect(await rolledBack.locator('tr[data-guardrail="checkout_error"]').getAttribute('data-harmed')).toBe('true');
    expect(await rolledBack.getByRole('button').count()).toBe(0);
    await expectAccessible(page, 'flag with a rolled back rollout at 390 px');
    // A hold the service's check set: since when, and the sample ratio's p-value
    await page.goto(`${server().baseUrl}/console#/flags/skewed`);
    const held = page.locator('article[data-rollout="1"][data-state="running"] [data-hold]');
    await held.waitFor();
    expect(await held.innerText()).toMatch(/^Held since \d{4}-\d\d-\d\d \d\d:\d\d UTC: the arms' exposures fail the sample-ratio check \(p = <\u00a00\.001\)/);
    await expectAccessible(page, 'flag with a held rollout at 390 px');
    await page.goto(`${server().baseUrl}/console#/flags/banner`);
    await running.waitFor();
    await expectAccessible(page, 'flag with rollouts at 390 px');
    expect(await overflows(page)).toEqual({ sideways: 0, outside: [] });
    expect(problems).toEqual([]);
    await page.close();
  });

  it("when a rollout is released from the flag's page, then the flag's form shows the value it released", async () => {
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'released_label', type: 'string', enabled: true, value: 'old label' } });
    await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: 'released_label' } }, body: { value: 'new label' } });
    const { page, problems } = await watchedPage(browser, 390);
    await signIn(page, server().baseUrl, team.token, '#/flags/released_label');
    await page.locator('article[data-rollout="1"][data-state="running"]').waitFor();
    expect(await page.getByLabel('Value', { exact: true }).inputValue()).toBe('old label');
    await page.getByRole('button', { name: 'Release rollout 1' }).first().click();
    await page.getByRole('dialog').getByRole('button', { name: 'Release rollout 1' }).click();
    await page.locator('article[data-rollout="1"][data-state="released"]').waitFor();
    await expect.poll(() => page.getByLabel('Value', { exact: true }).inputValue()).toBe('new label');
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

/**
 * Two safe rollouts of the flag `banner` whose value is the stored script: the first rolled back by
 * hand, the second running at 50 % with 40 participants exposed in the arms their hash gives, a
 * quarter of them with a `purchase` (its guardrail).
 */
async function exposeRollouts(team: TestTeam): Promise<void> {
  const path = { team: team.id, feature: 'banner' };
  const body = { value: SCRIPT, guardrails: [{ event: 'purchase', direction: 'increase' as const }], steps: [{ percentage: 50, hold_seconds: 86_400, minimum_exposures: 2000 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] };
  expect((await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path }, body })).response.status).toBe(200);
  expect((await team.api.POST('/api/teams/{team}/features/{feature}/rollouts/{rollout}/roll-back', { params: { path: { ...path, rollout: '1' } } })).response.status).toBe(200);
  const created = await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path }, body });
  const { seed, share } = created.data!.data;
  // 22 and 18 participants (the page tells the arms apart), as the check accepts (p = 0.53): a random seed may split 40 unevenly enough (about 1 time in 1 500) for it to hold the rollout.
  const items = [...participantsInArm(seed, share, 'new', 22, 'rollout'), ...participantsInArm(seed, share, 'current', 18, 'rollout')].map((participant, i) => {
    return { participant, rollout: { feature: 'banner', number: 2, arm: i < 22 ? ('new' as const) : ('current' as const) }, ...(i % 4 === 0 && { event: 'purchase' }) };
  });
  const exposed = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items } });
  expect(exposed.response.status).toBe(200);
}

/**
 * A flag `risky` whose safe rollout raises `checkout_error` (lower is better) from 5 % to 50 % of
 * 150 participants in each arm at 50 %: a check rolls it back.
 */
async function harmRollout(team: TestTeam): Promise<void> {
  const path = { team: team.id };
  expect((await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'checkout_error' } })).response.status).toBe(200);
  expect((await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'risky', enabled: true, value: 'old' } })).response.status).toBe(200);
  const body = { value: 'new', guardrails: [{ event: 'checkout_error', direction: 'decrease' as const }], steps: [{ percentage: 50, hold_seconds: 86_400, minimum_exposures: 0 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] };
  const { seed, share } = (await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: 'risky' } }, body })).data!.data;
  // 150 participants in each arm: a random seed may split 300 unevenly enough to hold the rollout.
  const items = [...participantsInArm(seed, share, 'new', 150, 'risky'), ...participantsInArm(seed, share, 'current', 150, 'risky')].map((participant, i) => {
    const arm = i < 150 ? ('new' as const) : ('current' as const);
    return { participant, rollout: { feature: 'risky', number: 1, arm }, ...((arm === 'new' ? i % 2 === 0 : i % 20 === 0) && { event: 'checkout_error' }) };
  });
  expect((await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } })).response.status).toBe(200);
}

/** A flag `skewed` whose safe rollout has 60 exposures in its new arm and none in the current one: a check holds it. */
async function skewRollout(team: TestTeam): Promise<void> {
  const path = { team: team.id };
  expect((await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'skewed', enabled: true, value: 'old' } })).response.status).toBe(200);
  const body = { value: 'new', steps: [{ percentage: 50, hold_seconds: 86_400, minimum_exposures: 0 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }] };
  const { seed, share } = (await team.api.POST('/api/teams/{team}/features/{feature}/rollouts', { params: { path: { ...path, feature: 'skewed' } }, body })).data!.data;
  const items = participantsInArm(seed, share, 'new', 60, 'skewed').map((participant) => ({ participant, rollout: { feature: 'skewed', number: 1, arm: 'new' as const } }));
  expect((await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } })).response.status).toBe(200);
}
