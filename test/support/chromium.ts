// Debian's headless Chromium for pages that talk to the service on the loopback address.
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * A page the test answers has no address of its own, so Chromium's local network access checks
 * would take it for a public one and refuse its requests to the loopback service; a real page
 * and service share an address space, or the service is public.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-features=LocalNetworkAccessChecks'],
  });
}
