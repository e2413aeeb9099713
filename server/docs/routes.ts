import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Express } from 'express';
import { contractPath } from '../contract/document';
import { NotFound } from '../http/errors';

const docsPath = fileURLToPath(new URL('../../dist/docs/index.html', import.meta.url));
const changelogPagePath = fileURLToPath(new URL('../../dist/docs/changelog.html', import.meta.url));
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

/** The index and the changelog page: no script at all, their own inline style only. */
export const PAGE_CSP = ["default-src 'none'", "style-src 'unsafe-inline'", "img-src data:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"].join('; ');

/** The mock's root page: where the docs, the contract and the changelog are (the server's root is its console). */
const index = () => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Experimentation Service</title>
    <link rel="icon" href="data:," />
    <style>
      :root { font-family: system-ui, sans-serif; color: #1b1f24; line-height: 1.5; }
      body { margin: 0 auto; max-width: 40rem; padding: 1rem 1.25rem 3rem; }
      dt { margin-top: 1rem; font-weight: 600; }
      dd { margin: 0; color: #57606a; }
    </style>
  </head>
  <body>
    <h1>Experimentation Service</h1>
    <p>Experiments, variants, feature flags, participants, ingest and per-variant statistics. The API is under <code>/api</code>.</p>
    <dl>
      <dt><a href="/docs">API docs</a></dt>
      <dd>Every operation, with a quickstart and curl and TypeScript samples.</dd>
      <dt><a href="/openapi.json">openapi.json</a></dt>
      <dd>The contract, for generators and tools.</dd>
      <dt><a href="/changelog">Changelog</a></dt>
      <dd>Every change to the contract.</dd>
    </dl>
  </body>
</html>
`;

/**
 * The mock's root: an index of the pages (the server serves its console there). The bundled contract at /openapi.json,
 * its rendered reference at /docs and its changelog at /changelog: a page for a browser (which
 * asks for HTML first), the Markdown file for anything else (curl, scripts) and at /changelog.md.
 */
export function serveContract(app: Express, { console }: { console: boolean }): void {
  const root = index();
  if (!console) app.get('/', (_req, res) => res.set('Content-Security-Policy', PAGE_CSP).type('html').send(root));
  app.get('/openapi.json', (_req, res) => res.sendFile(contractPath));
  app.get('/changelog', (req, res) => {
    res.vary('Accept');
    if (req.accepts(['text/plain', 'text/markdown', 'text/html']) === 'text/html' && existsSync(changelogPagePath)) {
      return res.set('Content-Security-Policy', PAGE_CSP).type('html').sendFile(changelogPagePath);
    }
    res.type('text/plain; charset=utf-8').sendFile(changelogPath);
  });
  // text/plain: a browser shows it where it would download text/markdown
  app.get('/changelog.md', (_req, res) => res.type('text/plain; charset=utf-8').sendFile(changelogPath));
  app.get('/docs', (_req, res) => {
    if (!existsSync(docsPath)) throw new NotFound('The docs are not built; run npm run docs.');
    res.set('Content-Security-Policy', DOCS_CSP).sendFile(docsPath);
  });
}
