// OpenFeature's community web provider, @openfeature/ofrep-web-provider on @openfeature/web-sdk, in
// a page in Debian's headless Chromium against the real server, configured with nothing of ours
// but `baseUrl` and the ingest key, polling off: every type evaluates, the event stream's first
// notice makes an unchanged re-fetch that is a 304, and a flag flip arrives through the stream.
// The flip's latency is measured in bench/ofrep-flip.ts, not here.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { CHROMIUM } from '../support/chromium';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { useChromium } from '../support/use-chromium';
import { openOfrepPage } from '../support/ofrep-web-page';
import type { TestTeam } from '../support/team';

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install -y chromium)`);

const WITHIN = { timeout: 60_000, interval: 100 };
const FLAGS: components['schemas']['FeatureCreate'][] = [
  { key: 'new_checkout', type: 'boolean', enabled: true, value: 'true' },
  { key: 'greeting', type: 'string', enabled: true, value: 'hello', rules: [{ type: 'force', conditions: { country: 'DE' }, value: 'hallo' }] },
  { key: 'page_size', type: 'number', enabled: true, value: '25' },
  { key: 'discount', type: 'number', enabled: true, value: '0.1', rules: [{ type: 'rollout', percentage: 100, value: '0.25' }] },
  { key: 'limits', type: 'json', enabled: true, value: '{"limit": 10, "tiers": ["a", "b"]}' },
  { key: 'dark_mode', type: 'boolean', enabled: false, value: 'true' },
];

describe.skipIf(!hasChromium).each(engines)('the OFREP web provider in headless Chromium on %s', (engine) => {
  const server = useServer(engine);
  const browser = useChromium();

  async function arranged(): Promise<TestTeam> {
    const team = await server().newTeam('Shop');
    for (const body of FLAGS) {
      const created = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body });
      expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    }
    return team;
  }

  it('when a page evaluates flags through the OFREP web provider, then every type answers, an unchanged re-fetch is a 304, and a flip arrives through the event stream', async () => {
    const team = await arranged();
    const shop = await openOfrepPage(browser(), server().baseUrl, team, { targetingKey: 'visitor-1', country: 'DE' });
    try {
      const read = await shop.read(FLAGS.map((flag) => flag.key));
      expect(read).toMatchObject({
        new_checkout: { value: true, reason: 'STATIC', variant: 'default' },
        greeting: { value: 'hallo', reason: 'TARGETING_MATCH', variant: 'rule_0' },
        page_size: { value: 25, reason: 'STATIC', variant: 'default' },
        discount: { value: 0.25, reason: 'SPLIT', variant: 'rule_0' },
        limits: { value: { limit: 10, tiers: ['a', 'b'] }, reason: 'STATIC', variant: 'default' },
        dark_mode: { value: false, reason: 'DISABLED' },
      });
      expect(Number.isInteger(read.page_size!.value)).toBe(true);

      // The provider opened the announced stream by its URL alone, and the stream's first notice
      // made it evaluate again with its ETag: nothing changed, so a 304.
      const bulk = (response: { url: URL }) => response.url.pathname === `/api/teams/${team.id}/ofrep/v1/evaluate/flags`;
      await expect.poll(() => shop.responses.filter((response) => response.url.pathname.endsWith('/ofrep/v1/event-stream')).map((response) => response.status), WITHIN).toEqual([200]);
      await expect.poll(() => shop.responses.filter(bulk).map((response) => response.status), WITHIN).toEqual([200, 304]);

      const heard = shop.changed('new_checkout', false);
      const flipped = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'new_checkout' } }, body: { value: 'false' } });
      expect(flipped.response.status).toBe(200);
      await heard;

      expect((await shop.read(['new_checkout'])).new_checkout).toMatchObject({ value: false, reason: 'STATIC' });
      // Heard through the stream: the re-fetch carries the notice's etag, and no poll ran.
      const refetch = shop.responses.filter(bulk).at(-1)!;
      expect(refetch.status).toBe(200);
      expect(refetch.url.searchParams.get('flagConfigEtag')).toMatch(new RegExp(`^"${team.id}\\.[0-9]+"$`));
      expect(shop.responses.filter(bulk).map((response) => response.status)).toEqual([200, 304, 200]);
    } finally {
      await shop.close();
    }
  });
  it('when a visitor without a targetingKey reads a missing flag, a split flag and a flag whose rules all miss, then FLAG_NOT_FOUND, TARGETING_KEY_MISSING and UNKNOWN', async () => {
    const team = await arranged();
    const shop = await openOfrepPage(browser(), server().baseUrl, team, { country: 'FR' });
    try {
      expect(await shop.read(['missing', 'discount', 'greeting', 'page_size'])).toMatchObject({
        missing: { value: false, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' },
        discount: { value: false, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' },
        greeting: { value: 'hello', reason: 'UNKNOWN', variant: 'default' },
        page_size: { value: 25, reason: 'STATIC', variant: 'default' },
      });
    } finally {
      await shop.close();
    }
  });
});
