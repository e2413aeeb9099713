// Migrations import nothing of the application — only Kysely, the engine's name and earlier
// migrations — so that what a migration does never changes when the application's code does.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const folder = fileURLToPath(new URL('../../server/storage/migrations/', import.meta.url));
const ALLOWED = /^(kysely|\.\.\/engine|\.\/\d{3}_[a-z_]+)$/;

describe('the migrations', () => {
  const files = readdirSync(folder).filter((file) => /^\d{3}_.+\.ts$/.test(file));

  it.each(files)('when %s is read, then it imports only Kysely, the engine type and earlier migrations', (file) => {
    const source = readFileSync(`${folder}${file}`, 'utf8');
    const imported = [...source.matchAll(/^import\s[^;]*?from\s+'([^']+)'/gms)].map((match) => match[1]!);
    expect(imported.filter((path) => !ALLOWED.test(path))).toEqual([]);
    for (const path of imported.filter((p) => p.startsWith('./'))) expect(path.slice(2) < file.replace(/\.ts$/, ''), `${file} imports a later migration`).toBe(true);
  });

  it('when they are listed, then there are migrations to check', () => {
    expect(files.length).toBeGreaterThan(15);
  });
});
