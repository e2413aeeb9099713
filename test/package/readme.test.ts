// The package's README (scripts/package/README.md, shipped as generated/README.md) read as a
// newcomer reads it beside the service's README: the same names, credentials and keys.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const packageReadme = readFileSync(`${root}scripts/package/README.md`, 'utf8');
const serviceReadme = readFileSync(`${root}README.md`, 'utf8');
const code = [...packageReadme.matchAll(/```(?:ts|html)\n([\s\S]*?)```/g)].map((match) => match[1]!);
const quickstart = serviceReadme.split(/^## Quickstart\n/m)[1]!.split(/^## /m)[0]!;

describe("the package's README", () => {
  it('when it is opened, then it says first that the package is ESM only', () => {
    const intro = packageReadme.split(/^## /m)[0]!;
    expect(intro).toMatch(/ESM only/);
    expect(JSON.parse(readFileSync(`${root}generated/package.json`, 'utf8')).type).toBe('module');
  });

  it("when its code reads the environment, then it uses the names the service's admin CLI exports", () => {
    const names = new Set(code.flatMap((block) => [...block.matchAll(/process\.env\.([A-Z_]+)/g)].map((match) => match[1]!)));
    expect([...names].sort()).toEqual(['INGEST_KEY', 'TEAM', 'TOKEN']);
    for (const name of names) expect(quickstart).toContain(name);
  });

  it('when its code writes a credential, then it has the prefix the service gives that credential', () => {
    const written = code.flatMap((block) => [...block.matchAll(/ingestKey: '([^']*)'/g)].map((match) => match[1]!));
    expect(written.length).toBeGreaterThan(0);
    for (const key of written) expect(key).toMatch(/^esk_/);
  });

  it("when its code names an experiment or an event, then the service's Quickstart creates it", () => {
    const created = new Set([...quickstart.matchAll(/"(?:key|event)": "([a-z_]+)"/g)].map((match) => match[1]!));
    const named = code.flatMap((block) => [
      ...[...block.matchAll(/\.experiment\('([^']+)'/g)].map((match) => match[1]!),
      ...[...block.matchAll(/\.track\([^,]+, '([^']+)'/g)].map((match) => match[1]!),
      ...[...block.matchAll(/\bevent: '([^']+)'/g)].map((match) => match[1]!),
      ...[...block.matchAll(/\bkey: '([a-z_]+)'/g)].map((match) => match[1]!),
    ]);
    expect(named.length).toBeGreaterThan(3);
    for (const key of named) expect(created, key).toContain(key);
  });

  it('when its browser example uses the visitor, then it defines it first', () => {
    const page = code.find((block) => block.includes('<script type="module">'))!;
    expect(page.indexOf('const visitorId')).toBeGreaterThan(-1);
    expect(page.indexOf('const visitorId')).toBeLessThan(page.indexOf('visitorId)'));
  });
});
