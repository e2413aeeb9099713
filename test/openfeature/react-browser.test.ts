// React through @openfeature/react-sdk on the package's web provider, in Debian's headless Chromium:
// the package README's React sample, as written (its base URL, team and ingest key set to the test
// server's), bundled with react-dom as an application's bundler would and mounted on a page of
// another origin than the service's. Its component re-renders when the flag it reads is flipped
// through the API, and again when it is flipped back.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { CHROMIUM } from '../support/chromium';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { useChromium } from '../support/use-chromium';

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI === 'true') throw new Error(`${CHROMIUM} is required in CI (apt-get install -y chromium)`);

const readme = readFileSync(fileURLToPath(new URL('../../scripts/package/README.md', import.meta.url)), 'utf8');
const sample = [...readme.matchAll(/```tsx\n([\s\S]*?)```/g)].map((match) => match[1]!);

/** The README's sample with the test server's base URL, team and ingest key, mounted at #root. */
async function bundled(baseUrl: string, team: number, ingestKey: string): Promise<string> {
  const options = `{ baseUrl: ${JSON.stringify(baseUrl)}, team: ${team}, ingestKey: ${JSON.stringify(ingestKey)} }`;
  const source = sample[0]!.replace(/\{ baseUrl: '[^']*', team: 1, ingestKey: 'esk_…' \}/, options);
  expect(source, 'the sample configures the provider as the README shows').toContain(options);
  const mount = "import { createRoot } from 'react-dom/client';\ncreateRoot(document.getElementById('root')!).render(<App />);\n";
  const built = await build({
    stdin: { contents: source + mount, loader: 'tsx', resolveDir: fileURLToPath(new URL('.', import.meta.url)) },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  return built.outputFiles[0]!.text;
}

describe.skipIf(!hasChromium).each(engines)('React on the package web provider in headless Chromium on %s', (engine) => {
  const server = useServer(engine);
  const browser = useChromium();

  it("when the flag the README's component reads is flipped, then the component re-renders with it, both ways", async () => {
    expect(sample).toHaveLength(1);
    const team = await server().newTeam('Shop');
    const flag = /useFlag\('([a-z_]+)', false\)/.exec(sample[0]!)![1]!;
    const created = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: flag, type: 'boolean', enabled: true, value: 'false' } });
    expect(created.response.status).toBe(200);
    const script = await bundled(server().baseUrl, team.id, team.ingestKey);
    const page = await browser().newPage();
    page.setDefaultTimeout(60_000);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    const shop = new URL(server().baseUrl);
    shop.hostname = 'localhost';
    await page.route(`${shop.origin}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/') return route.fulfill({ contentType: 'text/html', body: '<!doctype html><html><head><title>Shop</title></head><body><div id="root"></div><script type="module" src="/app.js"></script></body></html>' });
      if (path === '/app.js') return route.fulfill({ contentType: 'text/javascript', body: script });
      return route.fulfill({ status: 404 });
    });
    const flip = async (value: string) => {
      const changed = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: flag } }, body: { value } });
      expect(changed.response.status).toBe(200);
    };
    try {
      // The provider has read the config once its SDK opens the config stream.
      const streaming = page.waitForRequest((request) => request.url().endsWith(`/api/teams/${team.id}/config/stream`));
      await page.goto(`${shop.origin}/`);
      await streaming.catch((error: unknown) => {
        throw new Error(`${String(error)}: ${problems.join('; ')}`);
      });
      expect(await page.locator('aside').count()).toBe(0);

      await flip('true');
      await expect.poll(() => page.locator('aside').allInnerTexts(), { timeout: 60_000, interval: 100 }).toEqual(['New!']);
      await flip('false');
      await expect.poll(() => page.locator('aside').count(), { timeout: 60_000, interval: 100 }).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
