// Renders the API docs (dist/docs/index.html, served at /docs) from the bundled contract, with
// the changelog as their last section, in one self-contained page that loads nothing from
// elsewhere, and the changelog on its own as HTML (dist/docs/changelog.html, served at /changelog).
// What the page gets after Redoc renders it, each checked by the docs test in Chromium:
// - its sidebar logo inlined as a data: URL: Redoc's footer would fetch it from cdn.redoc.ly,
//   which the page's Content-Security-Policy blocks (a broken image);
// - its menu links written as the in-page links (`#/…`) Redoc's script makes of them: Redoc
//   prerenders them as paths (`/section/…`), which hydration keeps, so a link opened in a new tab
//   asked the server for /section/… (a 404);
// - a title small enough to break between words, not inside one ("Experimentati / on").
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import MarkdownIt from 'markdown-it';

const root = resolve(import.meta.dirname, '..');
const outDir = join(root, 'dist', 'docs');
const documentPath = join(outDir, 'openapi.json');
const pagePath = join(outDir, 'index.html');
const changelogPath = join(outDir, 'changelog.html');
// Redoc's output before the fixes below; the served files are replaced whole (a server reading them meanwhile gets the old or the new one).
const renderedPath = join(outDir, 'rendered.html');
const replaceFile = (path: string, text: string) => {
  writeFileSync(`${path}.new`, text);
  renameSync(`${path}.new`, path);
};
const changelog = apiChangesFirst(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'));

/**
 * The changelog as its readers look for it: in each release, the entries that change no operation
 * (storage, internals: "**Modification:** no operation changes. …") move from their section into
 * one of their own, "Without API changes", at the end of the release, so that the page opens with
 * what changed in the API. /changelog.md stays the file as written.
 */
function apiChangesFirst(markdown: string): string {
  const [head, ...releases] = markdown.split(/^(?=## )/m);
  return [head, ...releases.map(reorderRelease)].join('');
}

function reorderRelease(release: string): string {
  const [title, ...sections] = release.split(/^(?=### )/m);
  const internal: string[] = [];
  const kept = sections.map((section) => {
    const [heading, ...entries] = section.split(/^(?=- )/m);
    const api = entries.filter((entry) => !/^- \*\*Modification:\*\* no operation changes\b/.test(entry) || !internal.push(entry));
    return api.length > 0 ? `${heading}${api.join('')}` : '';
  });
  if (internal.length === 0) return release;
  const last = internal.length - 1;
  internal[last] = internal[last]!.replace(/\n*$/, '\n\n');
  return `${title}${kept.join('').replace(/\n*$/, '\n\n')}### Without API changes\n${internal.join('')}`;
}

/**
 * The changelog as the last entry of the sidebar, after the operations: a tag that holds only its
 * description (Redoc's `x-traitTag`). Its entries' headings are HTML, not Markdown, so they do not
 * each become a sidebar entry; a blank line after each lets the Markdown under it be read as such.
 */
function changelogTag() {
  const body = changelog
    .replace(/^# Changelog\n/, '')
    .replace(/^(#{2,4}) (.*)$/gm, (_, hashes: string, text: string) => `<h${hashes.length + 1}>${escapeHtml(text)}</h${hashes.length + 1}>\n`)
    .trim();
  return { name: 'Changelog', description: `${body}\n\nOn a page of its own: [/changelog](/changelog); as Markdown: [/changelog.md](/changelog.md).`, 'x-traitTag': true };
}

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The changelog on a page of its own: what a browser gets at /changelog. */
function changelogPage(title: string): string {
  const body = new MarkdownIt({ html: false, linkify: false }).render(changelog);
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Changelog · ${escapeHtml(title)}</title>
    <link rel="icon" href="data:," />
    <style>
      :root { font-family: system-ui, sans-serif; color: #1b1f24; line-height: 1.5; }
      body { margin: 0 auto; max-width: 46rem; padding: 1rem 1.25rem 3rem; }
      nav { font-size: 0.9rem; }
      code { font-size: 0.9em; background: #f3f4f6; padding: 0 0.2em; border-radius: 3px; overflow-wrap: anywhere; }
      h2 { margin-top: 2.5rem; border-bottom: 1px solid #d0d7de; }
      li { margin: 0.35rem 0; }
    </style>
  </head>
  <body>
    <nav><a href="/docs">API docs</a> · <a href="/openapi.json">openapi.json</a> · <a href="/changelog.md">as Markdown</a></nav>
    <main>
${body}    </main>
  </body>
</html>
`;
}

const REDOC_LOGO = /https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g;
const INLINE_LOGO =
  'data:image/svg+xml,' +
  encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="16" viewBox="0 0 64 16"><text x="0" y="12" font-family="sans-serif" font-size="12" fill="#888">Redocly</text></svg>');
/** A prerendered link to a route of the page (`/`, `/section/quickstart`, `/experiments`): Redoc routes in the hash. */
const PRERENDERED_ROUTE = /(<a\b[^>]*?\shref=")\/(?=[a-z0-9"])/g;
/**
 * The theme sets the title at 36 px, where "Experimentation" is wider than the room beside the
 * Copy button in the middle column, so its `overflow-wrap: anywhere` cut the word in two. Smaller,
 * it fits, down to a 390 px phone. (Important: the theme's own rules come later in the page.)
 */
const TITLE_STYLE = '<style>[data-component-name="Typography/H1"] { font-size: clamp(1.4rem, 6vw, 1.75rem) !important; line-height: 1.25 !important; }</style>';

const document = JSON.parse(readFileSync(join(root, 'generated', 'openapi.json'), 'utf8'));
document.tags = [...(document.tags ?? []), changelogTag()];
mkdirSync(outDir, { recursive: true });
replaceFile(documentPath, JSON.stringify(document));
// Quiet unless it fails: Redocly prints notices (Node 20's end of life, Redoc 3) on every run, at every `npm start`.
try {
  execFileSync(join(root, 'node_modules/.bin/redocly'), ['build-docs', documentPath, '--inlineBundle', '--title', document.info.title, '-o', renderedPath], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
} catch (error) {
  const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
  process.stderr.write(`${stdout ?? ''}${stderr ?? ''}`);
  throw error;
}
const page = readFileSync(renderedPath, 'utf8');
rmSync(renderedPath);
if (!REDOC_LOGO.test(page)) throw new Error('Redoc no longer loads its logo from cdn.redoc.ly: check scripts/docs.ts');
if (page.search(PRERENDERED_ROUTE) < 0) throw new Error('Redoc no longer prerenders its menu links as paths: check scripts/docs.ts');
// No icon of its own: without one, the browser asks the server for /favicon.ico (a 404).
const fixed = page
  .replace(REDOC_LOGO, INLINE_LOGO)
  .replace(PRERENDERED_ROUTE, '$1#/')
  .replace('<head>', `<head>\n    <link rel="icon" href="data:,">\n    ${TITLE_STYLE}`);
replaceFile(pagePath, fixed);
replaceFile(changelogPath, changelogPage(document.info.title));
