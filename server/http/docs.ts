import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Express } from 'express';
import { contractPath } from './contract';
import { NotFound } from './errors';

const docsPath = fileURLToPath(new URL('../../dist/docs/index.html', import.meta.url));
const changelogPath = fileURLToPath(new URL('../../CHANGELOG.md', import.meta.url));

/**
 * The docs page loads nothing from outside this origin: Redoc's sidebar footer would fetch its
 * logo from cdn.redoc.ly (no option turns it off), and readers' browsers must not call third
 * parties. Redoc runs inline; its search falls back from eval'd workers to the main thread.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The bundled contract at /openapi.json, its rendered reference at /docs and its changelog (Markdown) at /changelog. */
export function serveContract(app: Express): void {
  app.get('/openapi.json', (_req, res) => res.sendFile(contractPath));
  app.get('/changelog', (_req, res) => res.type('text/plain; charset=utf-8').sendFile(changelogPath));
  app.get('/docs', (_req, res) => {
    if (!existsSync(docsPath)) throw new NotFound('The docs are not built; run npm run docs.');
    res.set('Content-Security-Policy', DOCS_CSP).sendFile(docsPath);
  });
}
