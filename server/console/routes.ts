import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Express, Response } from 'express';
import { NotFound } from '../http/errors';

// Built by `npm run console` (prestart, npm test, the tests' global setup) from console/.
const builtDir = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/**
 * The console's script and style are files of this origin and it calls only this origin's API:
 * no inline script or style, nothing loaded from elsewhere, no framing.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const FILES: Record<string, string> = {
  'console.js': 'text/javascript',
  'console.js.map': 'application/json',
  'console.css': 'css',
  'icon.svg': 'image/svg+xml',
};

/**
 * The console at /console: a page of the contract's client for the people who run experiments.
 * `/` leads to it; `/results` (the results page it replaced) too — the browser keeps the
 * `#experiment` of an old link across the redirect, and the console opens that experiment.
 */
export function serveConsole(app: Express): void {
  const send = (res: Response, file: string, type: string) => {
    if (!existsSync(`${builtDir}${file}`)) throw new NotFound('The console is not built; run npm run console.');
    res.set('Content-Security-Policy', CONSOLE_CSP).set('Cache-Control', 'no-cache').type(type).sendFile(file, { root: builtDir });
  };
  app.get('/', (_req, res) => res.redirect(302, '/console'));
  app.get('/results', (_req, res) => res.redirect(301, '/console'));
  app.get('/console', (_req, res) => send(res, 'index.html', 'html'));
  for (const [file, type] of Object.entries(FILES)) app.get(`/console/${file}`, (_req, res) => send(res, file, type));
}
