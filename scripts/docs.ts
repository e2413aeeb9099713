// Renders the API docs (dist/docs/index.html, served at /docs) from the bundled contract, with
// the changelog as their last section, in one self-contained page that loads nothing from
// elsewhere: Redoc's sidebar footer would fetch its logo from cdn.redoc.ly, which the page's
// Content-Security-Policy blocks (a broken image); it gets a logo inlined as a data: URL instead.
// The docs test fails on any broken image and any console error.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const outDir = join(root, 'dist', 'docs');
const documentPath = join(outDir, 'openapi.json');
const pagePath = join(outDir, 'index.html');

/** The changelog's entries, one heading level down, under a `## Changelog` of the description. */
function changelogSection(): string {
  const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8').replace(/^# Changelog\n/, '');
  return `## Changelog\n\n${changelog.replace(/^(#+) /gm, '#$1 ').trim()}\n`;
}

const REDOC_LOGO = /https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g;
const INLINE_LOGO =
  'data:image/svg+xml,' +
  encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="16" viewBox="0 0 64 16"><text x="0" y="12" font-family="sans-serif" font-size="12" fill="#888">Redocly</text></svg>');

const document = JSON.parse(readFileSync(join(root, 'generated', 'openapi.json'), 'utf8'));
document.info.description = `${document.info.description}\n\n${changelogSection()}`;
mkdirSync(outDir, { recursive: true });
writeFileSync(documentPath, JSON.stringify(document));
execFileSync(join(root, 'node_modules/.bin/redocly'), ['build-docs', documentPath, '--inlineBundle', '--title', document.info.title, '-o', pagePath], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
});
const page = readFileSync(pagePath, 'utf8');
if (!REDOC_LOGO.test(page)) throw new Error('Redoc no longer loads its logo from cdn.redoc.ly: check scripts/docs.ts');
// No icon of its own: without one, the browser asks the server for /favicon.ico (a 404).
writeFileSync(pagePath, page.replace(REDOC_LOGO, INLINE_LOGO).replace('<head>', '<head>\n    <link rel="icon" href="data:,">'));
console.log(`docs: ${pagePath}`);
