import { fileURLToPath } from 'node:url';
import type { Express, Response } from 'express';

// From the repository's root, as the other files the server serves: the same from the compiled server.
const pageDir = fileURLToPath(new URL('../../server/results/page/', import.meta.url));

/**
 * Stricter than the docs' policy (which Redoc needs inline): the page's script and style are
 * files of this origin, it calls only this origin's API, and it loads nothing else.
 */
export const RESULTS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The results page at /results: a static page that reads the API with the token the reader gives it. */
export function serveResultsPage(app: Express): void {
  const send = (file: string, type: string) => (_req: unknown, res: Response) => {
    res.set('Content-Security-Policy', RESULTS_CSP).set('Cache-Control', 'no-cache').type(type).sendFile(file, { root: pageDir });
  };
  app.get('/results', send('index.html', 'html'));
  app.get('/results/results.js', send('results.js', 'text/javascript'));
  app.get('/results/results.css', send('results.css', 'css'));
  app.get('/results/icon.svg', send('icon.svg', 'image/svg+xml'));
}
