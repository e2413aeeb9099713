// The console's results view in Chromium, against experiments arranged through the API: what it
// draws is the API's answer — one verdict per variant and event, saying what it judges, the goal
// first — rounded with sense, and it fits a 390 px phone.
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { setClock } from '../../server/storage/values';
import { expectAccessible, hasChromium, launch, overflows, signIn, watchedPage } from '../support/console';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

type ExperimentResults = components['schemas']['ExperimentResults'];
type IngestRequest = components['schemas']['IngestRequest'];
const output = fileURLToPath(new URL('../output/', import.meta.url));

describe.skipIf(!hasChromium).each(engines)("the console's results view on %s", (engine) => {
  const server = useServer(engine);
  let browser: Browser;
  let team: TestTeam;

  async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (response.status !== 200) throw new Error(`${response.url} answered ${response.status}: ${JSON.stringify(error)}`);
    return data!;
  }

  async function experiment(key: string, body: { guardrails?: string[]; minimum_effect?: number } = {}) {
    const path = { team: team.id, experiment: key };
    await ok(team.api.POST('/api/teams/{team}/experiments', { params: { path: { team: team.id } }, body: { key, event: 'purchase', ...body } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key: 'control', control: true } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path }, body: { key: 'treatment' } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path } }));
  }

  async function enrol(key: string, variant: string, prefix: string, count: number, converters: number) {
    const items = Array.from({ length: count }, (_, i): IngestRequest => ({ participant: `${prefix}-${i}`, experiment: key, variant, ...(i < converters ? { event: 'purchase' } : {}) }));
    const { data } = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items } });
    expect(data?.data.every((outcome) => outcome.status === 200)).toBe(true);
  }

  const results = async (key: string): Promise<ExperimentResults> =>
    (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: key }, query: { events: ['add_to_cart', 'purchase', 'refund'] } } }))).data;

  beforeAll(async () => {
    team = await server().newTeam('Results view');
    const restore = setClock(() => new Date('2026-06-01T09:00:00.000Z'));
    try {
      // Created in this order so that the API's own order is not the goal first
      for (const [key, type] of [['add_to_cart', 'count'], ['purchase', 'unique'], ['refund', 'unique']] as const) {
        await ok(team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key, type } }));
      }
      await experiment('checkout', { guardrails: ['refund'], minimum_effect: 0.05 });
      await experiment('broken_split');
      for (let day = 0; day < 5; day++) {
        setClock(() => new Date(Date.UTC(2026, 5, 1 + day, 12)));
        await enrol('checkout', 'control', `c${day}`, 200, 20);
        await enrol('checkout', 'treatment', `t${day}`, 200, 34);
      }
      const carts = Array.from({ length: 30 }, (_, i): IngestRequest[] => [0, 1].map(() => ({ participant: `t0-${i}`, experiment: 'checkout', event: 'add_to_cart' }))).flat();
      await ok(team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items: carts } }));
      await enrol('broken_split', 'control', 'bc', 300, 30);
      await enrol('broken_split', 'treatment', 'bt', 200, 20);
      // A first hour with a handful of participants and no conversion in either arm
      setClock(() => new Date('2026-06-07T12:00:00.000Z'));
      await experiment('first_hour');
      await enrol('first_hour', 'control', 'fc', 4, 0);
      await enrol('first_hour', 'treatment', 'ft', 4, 0);
      // Returning customers: half of them bought three days before the experiment, and those are likelier to buy again
      const returning = (prefix: string) => Array.from({ length: 80 }, (_, i) => ({ key: `${prefix}-${i}`, boughtBefore: i % 2 === 0, buys: i % 2 === 0 ? i % 10 !== 0 : i % 7 === 0 }));
      const [controls, treated] = [returning('rc'), returning('rt')];
      setClock(() => new Date('2026-06-04T12:00:00.000Z'));
      const before = [...controls, ...treated].filter((p) => p.boughtBefore).map((p): IngestRequest => ({ participant: p.key, event: 'purchase', enrol: false }));
      await ok(team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items: before } }));
      setClock(() => new Date('2026-06-07T13:00:00.000Z'));
      await experiment('returning');
      for (const [variant, participants] of [['control', controls], ['treatment', treated]] as const) {
        const items = participants.map((p): IngestRequest => ({ participant: p.key, experiment: 'returning', variant, ...(p.buys || (variant === 'treatment' && p.key.endsWith('-3')) ? { event: 'purchase' } : {}) }));
        await ok(team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items } }));
      }
    } finally {
      restore();
    }
    browser = await launch();
  }, 180_000);
  afterAll(async () => void (await browser?.close()));

  async function open(page: Page, key: string) {
    await page.goto(`${server().baseUrl}/console#/experiments/${key}`);
    await page.locator(`section.results[data-drawn^="${key}:"] svg.sequence`).first().waitFor();
  }

  it('when an experiment is opened, then the goal comes first, then the guardrail, each variant has one verdict saying what it judges, and the charts are the API\'s figures', async () => {
    const { page, problems } = await watchedPage(browser);
    await signIn(page, server().baseUrl, team.token);
    const api = await results('checkout');

    await open(page, 'checkout');

    expect(await page.locator('article.event').evaluateAll((articles) => articles.map((a) => [a.getAttribute('data-event'), a.getAttribute('data-role')]))).toEqual([
      ['purchase', 'goal'],
      ['refund', 'guardrail'],
      ['add_to_cart', 'secondary'],
    ]);
    for (const event of api.events) {
      const view = page.locator(`article.event[data-event=${event.event}]`);
      const treatment = event.variants.find((v) => v.variant === 'treatment')!;
      const line = view.locator('.verdict-lines li');
      expect(await line.count()).toBe(1);
      expect(await line.locator('.decision').getAttribute('data-verdict')).toBe(treatment.decision!.verdict ?? 'collecting');
      expect(await line.innerText()).toContain(event.metric === 'mean' ? 'on the mean per participant' : 'on the conversion rate');
      // The difference chart: the decision's difference and its sequence
      const row = view.locator('svg.forest g.row[data-variant=treatment]');
      if (treatment.decision!.difference !== null && treatment.decision!.confidence_sequence) expect(Number(await row.locator('circle.estimate').getAttribute('data-difference'))).toBe(treatment.decision!.difference);
      const chance = treatment.statistics.means?.chance_to_beat_control;
      if (event.metric === 'mean') expect(await view.locator('tr[data-variant=treatment] td[data-label="chance to beat"]').innerText()).toMatch(chance == null ? /^—$/ : /\d\s%$/);
      // No "p (Welch)" and no second table of rates above a count event's means
      expect(await view.locator('table').count()).toBe(1);
    }
    const goal = api.events.find((e) => e.goal)!.variants.find((v) => v.variant === 'treatment')!;
    expect(goal.decision!.verdict).toBe('variant_better');
    // A decided verdict has no planning line beside it
    expect(await page.locator('article.event[data-event=purchase] p.needed').count()).toBe(0);
    // Sensible rounding: no "100.0 %", a p below 0.001 written so
    const text = await page.locator('section.results').innerText();
    expect(text).not.toMatch(/100\.0\s%/);
    expect(text).not.toMatch(/−0(\.0+)?\s?pp/);
    if (goal.decision!.adjusted_p_value! < 0.001) expect(await page.locator('article.event[data-event=purchase] .verdict-lines').innerText()).toMatch(/p\s<\s0\.001/);

    // The history: a point per day at the API's difference
    const points = await page.locator('article.history svg.sequence[data-variant=treatment] circle.point').evaluateAll((circles) => circles.map((c) => [c.getAttribute('data-day'), Number(c.getAttribute('data-difference'))]));
    expect(points).toEqual(api.history.days.map((d) => [d.day, d.variants.find((v) => v.variant === 'treatment')!.difference]));
    await expectAccessible(page, 'results of checkout');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when a running experiment\'s coverage was changed, then its recent changes beside the results say who started it and who changed the coverage, from what to what', async () => {
    const changed = await team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: team.id, experiment: 'checkout' } }, body: { coverage: 80 } });
    expect(changed.response.status).toBe(200);
    const { page, problems } = await watchedPage(browser);
    await signIn(page, server().baseUrl, team.token);
    await open(page, 'checkout');
    const changes = page.locator('section.changes');
    await changes.locator('li[data-action=updated]').first().waitFor();
    expect(await changes.locator('li[data-action=updated]').first().innerText()).toContain(`${team.email} changed coverage from 100 to 80`);
    expect(await changes.locator('li[data-action=started]').innerText()).toContain(`${team.email} started it`);
    // Newest first: the coverage change, then the start, then the creation
    expect(await changes.locator('li').evaluateAll((items) => items.map((item) => item.getAttribute('data-action')))).toEqual(expect.arrayContaining(['updated', 'started', 'created']));
    const actions = await changes.locator('li').evaluateAll((items) => items.map((item) => item.getAttribute('data-action')));
    expect(actions.indexOf('updated')).toBeLessThan(actions.indexOf('started'));
    expect(actions.indexOf('started')).toBeLessThan(actions.indexOf('created'));
    await expectAccessible(page, 'recent changes');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when the axis is drawn, then it spans the data, not 0 to 100 %', async () => {
    const { page } = await watchedPage(browser);
    await signIn(page, server().baseUrl, team.token);
    await open(page, 'checkout');
    const labels = await page.locator('article.event[data-event=purchase] svg.forest text.muted').allTextContents();
    const values = labels.map((label) => Number(label.replace('−', '-').replace(/[^\d.+-]/g, '')));
    // The treatment's sequence lies within a few tens of points: the axis stays within ±50 pp
    expect(Math.max(...values.map(Math.abs))).toBeLessThan(50);
    await page.close();
  });

  it('when an experiment has run an hour with nothing converted, then nothing reads as a finding', async () => {
    const { page, problems } = await watchedPage(browser, 390);
    await signIn(page, server().baseUrl, team.token);
    await open(page, 'first_hour');
    const row = page.locator('article.event[data-event=purchase] tr[data-variant=treatment]');
    expect(await row.locator('td[data-label="chance to beat"]').innerText()).toBe('—');
    expect(await page.locator('dl.summary').innerText()).not.toMatch(/0\.0\d/);
    expect(await page.locator('section.results').innerText()).not.toMatch(/−0(\.0+)?\s?pp/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("when participants have a history before the experiment, then each verdict is marked CUPED and the adjusted interval shows beside the unadjusted one with the variance it removed, as the API gives them", async () => {
    const { page, problems } = await watchedPage(browser, 390);
    await signIn(page, server().baseUrl, team.token);
    await open(page, 'returning');
    const answer = (await results('returning')).events.find((e) => e.event === 'purchase')!.variants.find((v) => v.variant === 'treatment')!;
    const adjustment = answer.statistics.regression_adjustment!;
    expect(adjustment.variance_reduction).toBeGreaterThan(0.1);
    const purchase = page.locator('article.event[data-event=purchase]');
    expect(await purchase.locator('.verdict-lines li[data-variant=treatment] abbr.cuped').innerText()).toBe('CUPED');
    const line = await purchase.locator('.adjustments li[data-variant=treatment]').innerText();
    expect(line).toContain(`last 14 days`);
    expect(line).toContain(`${Math.round(adjustment.variance_reduction * 100)}${'\u00a0'}% less variance`);
    const lower = (adjustment.difference_interval!.lower * 100).toFixed(2);
    expect(line.replace(/[−]/g, '-')).toContain(lower);
    expect(await overflows(page)).toEqual({ sideways: 0, outside: [] });
    await expectAccessible(page, 'results of returning');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when the split is broken, then a warning says so', async () => {
    const { page, problems } = await watchedPage(browser);
    await signIn(page, server().baseUrl, team.token);
    await open(page, 'broken_split');
    expect(await page.locator('#srm-warning').innerText()).toMatch(/Sample-ratio mismatch/);
    expect((await results('broken_split')).srm_warning).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it.each([390, 1280])('when it is %i px wide, then nothing scrolls sideways and a control\'s card has no empty lines (screenshot: test/output/console-results-<width>.png)', async (width) => {
    const { page, problems } = await watchedPage(browser, width);
    await signIn(page, server().baseUrl, team.token);
    await open(page, 'checkout');
    expect(await overflows(page)).toEqual({ sideways: 0, outside: [] });
    if (width === 390) {
      const shown = await page.locator('article.event[data-event=purchase] tr[data-variant=control] td').evaluateAll((cells) => cells.filter((c) => (globalThis as unknown as { getComputedStyle(e: unknown): { display: string } }).getComputedStyle(c).display !== 'none').map((c) => c.textContent));
      expect(shown.every((text) => text !== '—')).toBe(true);
    }
    mkdirSync(output, { recursive: true });
    await page.screenshot({ path: `${output}console-results-${width}.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });
});
