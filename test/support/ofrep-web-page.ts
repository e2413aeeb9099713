// A page that runs OpenFeature's community OFREP web provider (@openfeature/ofrep-web-provider on
// @openfeature/web-sdk, bundled as an application's bundler would) against the service, on another
// origin than the service's, in Debian's headless Chromium: for the browser test and the flip bench.
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';

declare const window: {
  ofrep: {
    read(keys: string[]): Record<string, { value: unknown; reason?: string; variant?: string; errorCode?: string }>;
    changed(key: string, value: unknown): Promise<number>;
    close(): Promise<void>;
  };
};

/** The page's script: the provider with the ingest key and no polling, so that only the event stream tells it of changes. */
const PAGE_SCRIPT = `
import { OpenFeature, ProviderEvents, OFREPWebProvider } from './ofrep-web.js';
const { baseUrl, ingestKey, context } = JSON.parse(document.getElementById('options').textContent);
const provider = new OFREPWebProvider({ baseUrl, headers: [['Authorization', 'Bearer ' + ingestKey]], pollInterval: 0 });
await OpenFeature.setContext(context);
await OpenFeature.setProviderAndWait(provider);
const client = OpenFeature.getClient();
const details = (key) => {
  const fallback = { boolean: false, string: '', number: 0, object: {} };
  for (const [type, read] of [['boolean', client.getBooleanDetails], ['number', client.getNumberDetails], ['string', client.getStringDetails], ['object', client.getObjectDetails]]) {
    const answer = read.call(client, key, fallback[type]);
    if (answer.errorCode !== 'TYPE_MISMATCH') return answer;
  }
};
window.ofrep = {
  read: (keys) => Object.fromEntries(keys.map((key) => [key, details(key)])),
  // Resolves with the time (ms since the epoch) when CONFIGURATION_CHANGED shows the flag at the value.
  changed: (key, value) => new Promise((resolve) => {
    const look = () => {
      if (JSON.stringify(details(key).value) !== JSON.stringify(value)) return;
      client.removeHandler(ProviderEvents.ConfigurationChanged, look);
      resolve(performance.timeOrigin + performance.now());
    };
    client.addHandler(ProviderEvents.ConfigurationChanged, look);
    look();
  }),
  close: () => OpenFeature.close(),
};
`;

let bundle: Promise<string> | undefined;

/** @openfeature/web-sdk and @openfeature/ofrep-web-provider as one ES module for the page. */
function ofrepWebBundle(): Promise<string> {
  bundle ??= build({
    stdin: { contents: "export * from '@openfeature/web-sdk';\nexport { OFREPWebProvider } from '@openfeature/ofrep-web-provider';", resolveDir: import.meta.dirname },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'silent',
  }).then((built) => built.outputFiles[0]!.text);
  return bundle;
}

/** An answer of the service as the page's network saw it. */
export interface SeenResponse {
  url: URL;
  status: number;
  at: number;
}

export interface OfrepPage {
  page: Page;
  /** The service's answers to the page, in order. */
  responses: SeenResponse[];
  read(keys: string[]): Promise<Record<string, { value: unknown; reason?: string; variant?: string; errorCode?: string }>>;
  /** Starts watching for the flag at `value`; the promise is the time (ms since the epoch) when the provider told the change. */
  changed(key: string, value: unknown): Promise<number>;
  close(): Promise<void>;
}

/**
 * Opens the page at http://localhost:<port>/ (the service at http://127.0.0.1:<port>: another
 * origin, CORS as in production), set up with `context`, once its provider is ready.
 */
export async function openOfrepPage(browser: Browser, baseUrl: string, team: { id: number; ingestKey: string }, context: Record<string, unknown>): Promise<OfrepPage> {
  const script = await ofrepWebBundle();
  const page = await browser.newPage();
  page.setDefaultTimeout(60_000);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  const responses: SeenResponse[] = [];
  page.on('response', (response) => responses.push({ url: new URL(response.url()), status: response.status(), at: Date.now() }));
  const shop = new URL(baseUrl);
  shop.hostname = 'localhost';
  const options = JSON.stringify({ baseUrl: `${baseUrl}/api/teams/${team.id}`, ingestKey: team.ingestKey, context }).replaceAll('<', '\\u003c');
  await page.route(`${shop.origin}/**`, (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/') return route.fulfill({ contentType: 'text/html', body: `<!doctype html><html><head><title>Shop</title></head><body><script type="application/json" id="options">${options}</script><script type="module" src="/page.js"></script></body></html>` });
    if (path === '/page.js') return route.fulfill({ contentType: 'text/javascript', body: PAGE_SCRIPT });
    if (path === '/ofrep-web.js') return route.fulfill({ contentType: 'text/javascript', body: script });
    return route.fulfill({ status: 404 });
  });
  await page.goto(`${shop.origin}/`);
  await page.waitForFunction(() => 'ofrep' in window).catch((error: unknown) => {
    throw new Error(`${String(error)}: ${problems.join('; ')}`);
  });
  return {
    page,
    responses,
    read: (keys) => page.evaluate((keys) => window.ofrep.read(keys), keys),
    changed: (key, value) => page.evaluate(([key, value]) => window.ofrep.changed(key as string, value), [key, value] as const),
    async close() {
      await page.evaluate(() => window.ofrep.close()).catch(() => undefined);
      await page.close();
    },
  };
}
