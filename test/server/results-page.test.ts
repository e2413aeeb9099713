import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { setClock } from '../../server/storage/values';
import { useServer } from '../support/engines';
import type { TestTeam } from '../support/server';

/**
 * The results page at /results in Debian's headless Chromium, against a server holding an
 * experiment that ran over five days and one whose split is broken. The page reads the API the
 * test reads, so what it draws is compared with the API's answer.
 */

type ExperimentResults = components['schemas']['ExperimentResults'];
type IngestRequest = components['schemas']['IngestRequest'];

const CHROMIUM = '/usr/bin/chromium';
const output = fileURLToPath(new URL('../output/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install -y chromium)`);
  console.warn(`\n[notice] ${CHROMIUM} is not installed: the /results browser test is skipped (apt-get install -y chromium).\n`);
}

describe.skipIf(!hasChromium)('GET /results in headless Chromium', () => {
  const server = useServer('sqlite');
  let browser: Browser;
  let team: TestTeam;

  async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (response.status !== 200) throw new Error(`${response.url} answered ${response.status}: ${JSON.stringify(error)}`);
    return data!;
  }

  async function experiment(key: string) {
    const path = { team: team.id };
    await ok(team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key, event: 'purchase' } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team: team.id, experiment: key } }, body: { key: 'control', control: true } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team: team.id, experiment: key } }, body: { key: 'treatment' } }));
    await ok(team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: team.id, experiment: key } } }));
  }

  async function enrol(key: string, variant: string, prefix: string, count: number, converters: number) {
    const items = Array.from({ length: count }, (_, i): IngestRequest => ({ participant: `${prefix}-${i}`, experiment: key, variant, ...(i < converters ? { event: 'purchase' } : {}) }));
    const { data } = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items } });
    expect(data?.data.every((outcome) => outcome.status === 200)).toBe(true);
  }

  async function results(key: string, events?: string[]): Promise<ExperimentResults> {
    return (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: key }, query: { ...(events && { events }) } } }))).data;
  }

  beforeAll(async () => {
    // A checkout experiment over five days (the treatment converting better), and a broken split
    team = await server().newTeam('Results page');
    const restore = setClock(() => new Date('2026-06-01T09:00:00.000Z'));
    try {
      await ok(team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'purchase' } }));
      await ok(team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'add_to_cart', type: 'count' } }));
      await experiment('checkout');
      await experiment('broken_split');
      for (let day = 0; day < 5; day++) {
        setClock(() => new Date(Date.UTC(2026, 5, 1 + day, 12)));
        await enrol('checkout', 'control', `c${day}`, 200, 20);
        await enrol('checkout', 'treatment', `t${day}`, 200, 34);
      }
      // Some of the first day's treatment participants put two items in the cart (a count event)
      const carts = Array.from({ length: 30 }, (_, i): IngestRequest[] => [0, 1].map(() => ({ participant: `t0-${i}`, experiment: 'checkout', event: 'add_to_cart' }))).flat();
      await ok(team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team: team.id } }, body: { items: carts } }));
      await enrol('broken_split', 'control', 'bc', 300, 30);
      await enrol('broken_split', 'treatment', 'bt', 200, 20);
      // A first day with a handful of participants: one day of history, a sequence wider than ±100 pp
      setClock(() => new Date('2026-06-07T12:00:00.000Z'));
      await experiment('first_day');
      await enrol('first_day', 'control', 'fc', 4, 1);
      await enrol('first_day', 'treatment', 'ft', 4, 3);
    } finally {
      restore();
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });

  /** A page that records what would show a problem: console errors, page errors, requests elsewhere. */
  async function watchedPage(width = 1200): Promise<{ page: Page; problems: string[]; requests: string[] }> {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const problems: string[] = [];
    const requests: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => void problems.push(`page: ${error.message}`));
    page.on('requestfailed', (request) => void problems.push(`failed: ${request.url()}`));
    page.on('request', (request) => void requests.push(request.url()));
    return { page, problems, requests };
  }

  async function signIn(page: Page) {
    const response = await page.goto(`${server().baseUrl}/results`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'/);
    await page.locator('#token').fill(team.token);
    await page.locator('#sign-in button[type=submit]').click();
    await page.locator('#experiments a').first().waitFor();
    expect(await page.locator('#sign-in').isVisible(), 'the sign-in form is gone').toBe(false);
  }

  it('when a token is given and an experiment opened, then it draws each variant\'s rate and interval, the verdicts and the sequence over time as the API gives them, with nothing broken (screenshot: test/output/results.png)', async () => {
    const { page, problems, requests } = await watchedPage();
    const api = await results('checkout');

    await signIn(page);
    expect(await page.locator('#experiments a').allInnerTexts()).toEqual(['broken_split\nrunning', 'checkout\nrunning', 'first_day\nrunning']);
    await page.locator('#experiments a[data-experiment=checkout]').click();
    await page.locator('svg.sequence').first().waitFor();

    // The token is in this tab's sessionStorage only, never in the URL or localStorage
    expect(await page.evaluate("[sessionStorage.getItem('experimentation.token'), localStorage.length]")).toEqual([team.token, 0]);
    expect(page.url()).toBe(`${server().baseUrl}/results#checkout`);
    expect(requests.every((url) => url.startsWith(server().baseUrl) && !url.includes(team.token))).toBe(true);

    // One forest plot per event, a row per variant at the API's rate and interval
    for (const event of api.events) {
      const plot = page.locator(`article.event[data-event=${event.event}] svg.forest`);
      for (const variant of event.variants) {
        const row = plot.locator(`g.row[data-variant=${variant.variant}]`);
        const rate = variant.statistics.unique_conversion_rate;
        expect(await row.locator('circle.estimate').count()).toBe(rate === null ? 0 : 1);
        if (rate !== null) expect(Number(await row.locator('circle.estimate').getAttribute('data-rate'))).toBe(rate);
        if (variant.statistics.conversion_rate_interval) {
          expect(Number(await row.locator('line.interval').getAttribute('data-lower'))).toBe(variant.statistics.conversion_rate_interval.lower);
          expect(Number(await row.locator('line.interval').getAttribute('data-upper'))).toBe(variant.statistics.conversion_rate_interval.upper);
        }
        const verdict = page.locator(`article.event[data-event=${event.event}] tr[data-variant=${variant.variant}] .verdict`);
        expect(await verdict.count()).toBe(variant.verdict === null ? 0 : 1);
        if (variant.verdict) expect(await verdict.getAttribute('data-verdict')).toBe(variant.verdict);
        const corrected = page.locator(`article.event[data-event=${event.event}] tr[data-variant=${variant.variant}] .decision`);
        expect(await corrected.count()).toBe(variant.corrected_verdict === null ? 0 : 1);
        if (variant.corrected_verdict) expect(await corrected.getAttribute('data-verdict')).toBe(variant.corrected_verdict);
      }
      expect(await page.locator(`article.event[data-event=${event.event}] h3`).textContent()).toContain(`(${event.role}, `);
    }
    expect(api.events[0]!.variants.find((v) => v.variant === 'treatment')!.verdict).toBe('variant_better');

    // The goal's history: a point per day at the API's difference and sequence, inside a band
    expect(api.history.days.map((d) => d.day)).toEqual(['2026-06-01', '2026-06-02', '2026-06-03', '2026-06-04', '2026-06-05']);
    const chart = page.locator('article.history svg.sequence[data-variant=treatment]');
    expect(await chart.locator('polygon.sequence-band').count()).toBe(1);
    expect(await chart.locator('polyline.difference-line').count()).toBe(1);
    const pointsOf = (svg: typeof chart) =>
      svg.locator('circle.point').evaluateAll((circles) =>
        circles.map((c) => [c.getAttribute('data-day'), Number(c.getAttribute('data-difference')), Number(c.getAttribute('data-lower')), Number(c.getAttribute('data-upper')), c.getAttribute('data-corrected-verdict') || null]),
      );
    expect(await pointsOf(chart)).toEqual(
      api.history.days.map((d) => {
        const treatment = d.variants.find((v) => v.variant === 'treatment')!;
        return [d.day, treatment.difference, treatment.confidence_sequence!.lower, treatment.confidence_sequence!.upper, treatment.corrected_verdict];
      }),
    );
    expect(await page.locator('#srm-warning').count()).toBe(0);

    // The count event's means: a row per variant at the API's mean and difference
    const cart = (await results('checkout', ['purchase', 'add_to_cart'])).events.find((e) => e.event === 'add_to_cart')!;
    const means = page.locator('article.event[data-event=add_to_cart] table.means');
    for (const variant of cart.variants) {
      const cells = await means.locator(`tr[data-variant=${variant.variant}] td`).allInnerTexts();
      expect(cells[0]).toBe(variant.variant); // a control named control is not "control (control)"
      expect(cells[1]).toBe(variant.statistics.means!.mean!.toFixed(3));
      const sequence = variant.means_sequence?.confidence_sequence;
      expect(cells[6]).toBe(sequence ? `${sequence.lower.toFixed(3)} … ${sequence.upper.toFixed(3)}` : '—');
    }
    expect(await page.locator('article.event p.needed').count()).toBe(0); // the experiment states no minimum effect
    expect(cart.variants.find((v) => v.variant === 'treatment')!.statistics.means!.mean).toBeCloseTo(60 / 1000, 10);
    expect(cart.variants.find((v) => v.variant === 'treatment')!.means_sequence).not.toBeNull();

    // The count event's history: the sequence on the mean per participant, as the API gives it
    const cartHistory = (await ok(team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: team.id, experiment: 'checkout' }, query: { history_event: 'add_to_cart' } } }))).data.history;
    await page.locator('#history-event').selectOption('add_to_cart');
    const cartChart = page.locator('article.history[data-event=add_to_cart] svg.sequence[data-variant=treatment]');
    await cartChart.waitFor();
    // The carts came on the last day: before it, no variance on either side, so no sequence
    const cartDays = cartHistory.days.map((d) => ({ day: d.day, treatment: d.variants.find((v) => v.variant === 'treatment')! })).filter((d) => d.treatment.means_sequence !== null);
    expect(cartDays.map((d) => d.day)).toEqual(['2026-06-05']);
    expect(await pointsOf(cartChart)).toEqual(
      cartDays.map(({ day, treatment }) => {
        const sequence = treatment.means_sequence!;
        return [day, sequence.difference, sequence.confidence_sequence!.lower, sequence.confidence_sequence!.upper, treatment.corrected_verdict];
      }),
    );

    // Nothing broken: no image that failed, no console or page error
    expect(await page.evaluate('[...document.images].filter((image) => !image.complete || image.naturalWidth === 0).length')).toBe(0);
    mkdirSync(output, { recursive: true });
    await page.screenshot({ path: `${output}results.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when the split is broken, then a warning says so; when another event is picked, the history is that event\'s', async () => {
    const { page, problems } = await watchedPage();
    await signIn(page);

    await page.locator('#experiments a[data-experiment=broken_split]').click();
    const warning = page.locator('#srm-warning');
    await warning.waitFor();
    expect(await warning.isVisible()).toBe(true);
    expect(await warning.innerText()).toMatch(/Sample-ratio mismatch/);
    expect((await results('broken_split')).srm_warning).toBe(true);

    expect(await page.locator('#coverage-changes').count()).toBe(0);
    await page.locator('#history-event').selectOption('add_to_cart');
    await page.locator('article.history[data-event=add_to_cart]').waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when the token is wrong, then the page says so and keeps nothing', async () => {
    const { page } = await watchedPage();
    await page.goto(`${server().baseUrl}/results`, { waitUntil: 'load' });
    await page.locator('#token').fill('not-a-token');
    await page.locator('#sign-in button[type=submit]').click();
    await page.locator('#sign-in-error').waitFor();
    expect(await page.locator('#sign-in-error').innerText()).toMatch(/not valid/);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.close();
  });
  it('when the coverage was ramped, then the summary shows it and a table lists each change', async () => {
    const path = { team: team.id, experiment: 'broken_split' };
    await ok(team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { coverage: 20 } }));
    await ok(team.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path }, body: { coverage: 50.5 } }));
    const { page, problems } = await watchedPage();
    await signIn(page);

    await page.locator('#experiments a[data-experiment=broken_split]').click();
    const table = page.locator('#coverage-changes');
    await table.waitFor();

    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)));
    expect(rows).toEqual([
      ['100 %', '20 %'],
      ['20 %', '50.5 %'],
    ]);
    expect(await page.locator('dl.summary').innerText()).toContain('50.5 %');
    expect(problems).toEqual([]);
    await page.close();
  });

  /** Opens an experiment by its link and waits until its charts are drawn (the page marks what it drew). */
  async function open(page: Page, key: string, event = 'purchase') {
    await page.locator(`#experiments a[data-experiment=${key}]`).click();
    await page.locator(`#experiment[data-drawn="${key}:${event}"] svg.sequence`).first().waitFor();
  }

  /** What overflows: the page's sideways scroll, SVG texts outside their SVG, table values broken over lines. */
  const overflows = (page: Page) =>
    page.evaluate(`(() => {
      const sideways = document.documentElement.scrollWidth - document.documentElement.clientWidth;
      const texts = [...document.querySelectorAll('#experiment svg text')].filter((text) => {
        const box = text.getBoundingClientRect();
        const frame = text.ownerSVGElement.getBoundingClientRect();
        return box.left < frame.left - 0.5 || box.right > frame.right + 0.5 || box.top < frame.top - 0.5 || box.bottom > frame.bottom + 0.5;
      }).map((text) => text.textContent);
      // A value's text on more than one line: its text's boxes stand at more than one height
      const lines = (node) => {
        const range = document.createRange();
        range.selectNodeContents(node);
        return [...range.getClientRects()].map((rect) => Math.round(rect.top));
      };
      const textNodes = (cell) => { const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT); const nodes = []; while (walker.nextNode()) nodes.push(walker.currentNode); return nodes; };
      const wrapped = [...document.querySelectorAll('#experiment td:not(:first-child)')]
        .filter((cell) => textNodes(cell).some((text) => new Set(lines(text)).size > 1))
        .map((cell) => cell.textContent);
      // Anything of the results reaching past their column (drawn over, or cut off)
      const column = document.getElementById('experiment').getBoundingClientRect();
      const outside = [...document.querySelectorAll('#experiment *')].filter((node) => node.getBoundingClientRect().right > column.right + 0.5).map((node) => node.tagName);
      return { sideways, texts, wrapped, outside, svgTexts: document.querySelectorAll('#experiment svg text').length };
    })()`) as Promise<{ sideways: number; texts: string[]; wrapped: string[]; outside: string[]; svgTexts: number }>;

  it.each([390, 1280])('when it is %i px wide, then nothing scrolls sideways, every chart label is inside its chart and no value breaks over lines (screenshots: test/output/results-<width>.png)', async (width) => {
    const { page, problems } = await watchedPage(width);
    await signIn(page);
    mkdirSync(output, { recursive: true });

    for (const key of ['checkout', 'first_day']) {
      await open(page, key);
      const found = await overflows(page);
      expect(found.svgTexts).toBeGreaterThan(5);
      expect(found, key).toEqual({ sideways: 0, texts: [], wrapped: [], outside: [], svgTexts: found.svgTexts });
      await page.screenshot({ path: `${output}results-${key}-${width}.png`, fullPage: true });
    }
    // At 390 px the experiments are above the results, not beside them
    const [nav, section] = await Promise.all([page.locator('nav').boundingBox(), page.locator('#experiment').boundingBox()]);
    if (width === 390) expect(section!.y).toBeGreaterThanOrEqual(nav!.y + nav!.height);
    else expect(section!.x).toBeGreaterThanOrEqual(nav!.x + nav!.width);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when the window narrows, then the charts are drawn again at the new width', async () => {
    const { page, problems } = await watchedPage(1280);
    await signIn(page);
    await open(page, 'checkout');
    const wide = Number(await page.locator('#experiment').getAttribute('data-width'));

    await page.setViewportSize({ width: 390, height: 900 });
    await expect.poll(async () => Number(await page.locator('#experiment').getAttribute('data-width'))).toBeLessThan(390);

    expect(wide).toBeGreaterThan(700);
    expect(await overflows(page)).toMatchObject({ sideways: 0, texts: [], wrapped: [], outside: [] });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('when an experiment has run one day with a sequence wider than ±100 pp, then its band is drawn, cut at ±100 pp, with signed axis labels', async () => {
    const api = await results('first_day');
    const sequence = api.events[0]!.variants.find((v) => v.variant === 'treatment')!.confidence_sequence!;
    expect(sequence.lower).toBeLessThan(-1); // arranged: wider than a difference of rates can be
    const { page, problems } = await watchedPage(390);
    await signIn(page);

    await open(page, 'first_day');

    const chart = page.locator('article.history svg.sequence[data-variant=treatment]');
    const band = await chart.locator('.sequence-band').boundingBox();
    expect(band!.width).toBeGreaterThan(4);
    expect(band!.height).toBeGreaterThan(4);
    const labels = await chart.locator('text').allTextContents();
    expect(labels).toContain('−100\u00a0pp');
    expect(labels).toContain('2026-06-07');
    const row = page.locator('article.event[data-event=purchase] tr[data-variant=treatment]');
    expect(await row.locator('td[data-label="always-valid 95\u00a0%"]').textContent()).toMatch(/^−100\.00\u00a0pp … \+100\.00\u00a0pp$/);
    // The control's name is said once
    expect(await page.locator('article.event[data-event=purchase] tr[data-variant=control] td').first().textContent()).toBe('control');
    expect(await page.locator('article.event[data-event=purchase] svg.forest g.row[data-variant=control] text').textContent()).toBe('control');
    expect(problems).toEqual([]);
    await page.close();
  });
});
