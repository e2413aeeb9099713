// The breaking-change guard (scripts/breaking.ts), run against scratch git repositories that
// hold a copy of the contract and the changelog with one change made to them.
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Document, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';

const project = resolve(import.meta.dirname, '../..');
const tsx = join(project, 'node_modules/.bin/tsx');
const guard = join(project, 'scripts/breaking.ts');
const scratchDirs: string[] = [];
let template: string;

function git(repo: string, ...args: string[]): void {
  execFileSync('git', args, { cwd: repo, stdio: 'ignore' });
}

function commitAll(repo: string, message: string): void {
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '--no-gpg-sign', '-m', message);
}

/** A copy of the template repository: the contract and changelog committed once (then `setup`'s change, if any). */
function scratchRepo(setup?: (repo: string) => void): string {
  const repo = mkdtempSync(join(tmpdir(), 'breaking-test-'));
  scratchDirs.push(repo);
  cpSync(template, repo, { recursive: true });
  if (setup) {
    setup(repo);
    commitAll(repo, 'setup');
  }
  return repo;
}

function editYaml(repo: string, file: string, edit: (doc: Document) => void): void {
  const path = join(repo, file);
  const doc = parseDocument(readFileSync(path, 'utf8'));
  edit(doc);
  writeFileSync(path, doc.toString());
}

/** Adds a release section above the existing ones holding the given markdown list. */
function addChangelogEntries(repo: string, entries: string): void {
  const path = join(repo, 'CHANGELOG.md');
  const changelog = readFileSync(path, 'utf8');
  const firstRelease = changelog.indexOf('\n## ') + 1;
  const section = `## Unreleased\n\n${entries.trim()}\n\n`;
  writeFileSync(path, changelog.slice(0, firstRelease) + section + changelog.slice(firstRelease));
}

async function runGuard(repo: string, ...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(tsx, [guard, ...args], { cwd: repo });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

beforeAll(() => {
  template = mkdtempSync(join(tmpdir(), 'breaking-template-'));
  scratchDirs.push(template);
  for (const entry of ['openapi', 'redocly.yaml', 'CHANGELOG.md']) {
    cpSync(join(project, entry), join(template, entry), { recursive: true });
  }
  git(template, 'init', '-q');
  git(template, 'config', 'user.name', 'Breaking Test');
  git(template, 'config', 'user.email', 'breaking-test@example.com');
  commitAll(template, 'contract');
});

afterAll(() => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

interface BreakingChange {
  kind: string;
  finding: string;
  /** A new CHANGELOG.md entry that declares the change. */
  declaration: string;
  /** A change committed first, at the ref the guard compares against. */
  setup?: (repo: string) => void;
  apply: (repo: string) => void;
}

const breakingChanges: BreakingChange[] = [
  {
    kind: 'an operation is removed',
    finding: 'DELETE /api/teams/{team}/features/{feature}: operation removed',
    declaration: '- **Removal (breaking):** `DELETE /api/teams/{team}/features/{feature}` — use `PUT`.',
    apply: (repo) =>
      editYaml(repo, 'openapi/paths/teams_{team}_features_{feature}.yaml', (doc) => doc.delete('delete')),
  },
  {
    kind: 'a response status code is removed',
    finding: 'POST /api/teams/{team}/events: response 409 removed',
    // The operation is named on a continuation line of the entry.
    declaration: '- **Modification (breaking):** a duplicate key is no longer a 409 on\n  `POST /api/teams/{team}/events`.',
    apply: (repo) =>
      editYaml(repo, 'openapi/paths/teams_{team}_events.yaml', (doc) => doc.deleteIn(['post', 'responses', '409'])),
  },
  {
    kind: 'a request field becomes required',
    finding: 'POST /api/teams/{team}/events: request field body.description became required',
    declaration: '- **Modification (Breaking):** POST /api/teams/{team}/events requires `description`.',
    apply: (repo) =>
      editYaml(repo, 'openapi/components/schemas/EventCreate.yaml', (doc) =>
        (doc.get('required') as YAMLSeq).add('description'),
      ),
  },
  {
    kind: 'a response field is removed',
    finding: 'GET /api/user: response 200 field data.email removed',
    declaration: '- **Removal (breaking):** `email` from `GET /api/user`.',
    apply: removeUserEmail,
  },
  {
    kind: 'a response field is removed from the elements of an array',
    finding: 'POST /api/teams/{team}/ingest/batch: response 200 field data[].error removed',
    declaration: '- **Removal (breaking):** `error` from the items of `POST /api/teams/{team}/ingest/batch`.',
    apply: (repo) => editYaml(repo, 'openapi/components/schemas/IngestBatchItem.yaml', (doc) => doc.deleteIn(['properties', 'error'])),
  },
  ...(['allOf', 'oneOf'] as const).map((composition) => ({
    kind: `a response field is removed inside ${composition}`,
    finding: 'GET /api/user: response 200 field data.email removed',
    declaration: '- **Removal (breaking):** `email` from `GET /api/user`.',
    setup: (repo: string) => wrapUserIn(repo, composition),
    apply: (repo: string) => removeUserEmail(repo, [composition, 0]),
  })),
  {
    kind: 'a request field inside a nested object becomes required',
    finding: 'POST /api/teams/{team}/ingest: request field body.participant.notes became required',
    declaration:
      '- **Modification (breaking):** `participant.notes` is required by `POST /api/teams/{team}/ingest` and\n  `POST /api/teams/{team}/ingest/batch`.',
    apply: (repo) =>
      editYaml(repo, 'openapi/components/schemas/IngestParticipant.yaml', (doc) => (doc.get('required') as YAMLSeq).add('notes')),
  },
  {
    kind: "a request field's enum is narrowed",
    finding: 'POST /api/teams/{team}/events: request field body.type: enum value "count" removed',
    declaration: '- **Modification (breaking):** `POST /api/teams/{team}/events` no longer takes `count` events.',
    apply: (repo) =>
      editYaml(repo, 'openapi/components/schemas/EventCreate.yaml', (doc) => doc.setIn(['properties', 'type'], { type: 'string', enum: ['unique', 'value'] })),
  },
  {
    kind: "a query parameter's enum is narrowed",
    finding: 'GET /api/teams: query parameter sort: enum value "-name" removed',
    declaration: '- **Modification (breaking):** `GET /api/teams` no longer sorts by `-name`.',
    apply: (repo) =>
      editYaml(repo, 'openapi/components/parameters/Sort.yaml', (doc) => {
        const values = doc.getIn(['schema', 'enum']) as YAMLSeq;
        values.delete(values.items.findIndex((item) => String(item) === '-name'));
      }),
  },
  {
    kind: 'a query parameter is removed',
    finding: 'GET /api/teams/{team}/features: query parameter per_page removed',
    declaration: '- **Removal (breaking):** `per_page` from `GET /api/teams/{team}/features`.',
    apply: (repo) =>
      editYaml(repo, 'openapi/paths/teams_{team}_features.yaml', (doc) => {
        const parameters = doc.getIn(['get', 'parameters']) as YAMLSeq;
        parameters.delete(parameters.items.findIndex((item) => String((item as YAMLMap).get('$ref')).endsWith('PerPage.yaml')));
      }),
  },
  {
    kind: 'a response field may be of a new type',
    finding: 'GET /api/user: response 200 field data.email may also be null',
    declaration: '- **Modification (breaking):** `email` may be null in `GET /api/user`.',
    apply: (repo) => editYaml(repo, 'openapi/components/schemas/User.yaml', (doc) => doc.setIn(['properties', 'email', 'type'], ['string', 'null'])),
  },
];

/** User.yaml's schema moved, as it is, into the single branch of an allOf or a oneOf. */
function wrapUserIn(repo: string, composition: 'allOf' | 'oneOf'): void {
  const path = join(repo, 'openapi/components/schemas/User.yaml');
  const doc = parseDocument(readFileSync(path, 'utf8'));
  writeFileSync(path, new Document({ [composition]: [doc.toJS()] }).toString());
}

function removeUserEmail(repo: string, at: Array<string | number> = []): void {
  editYaml(repo, 'openapi/components/schemas/User.yaml', (doc) => {
    doc.deleteIn([...at, 'properties', 'email']);
    const required = doc.getIn([...at, 'required']) as YAMLSeq;
    required.delete(required.items.findIndex((item) => String(item) === 'email'));
  });
}

describe.concurrent('npm run breaking -- <git-ref>', { timeout: 300_000 }, () => {
  for (const change of breakingChanges) {
    it(`when ${change.kind} and no new CHANGELOG entry declares it, then it fails naming the change`, async () => {
      const repo = scratchRepo(change.setup);
      change.apply(repo); // left in the working tree, compared against HEAD

      const { code, output } = await runGuard(repo, 'HEAD');

      expect(output).toContain(`${change.finding} — NOT declared`);
      expect(code).toBe(1);
    });

    it(`when ${change.kind} and a new breaking CHANGELOG entry names the operation, then it passes`, async () => {
      const repo = scratchRepo(change.setup);
      change.apply(repo);
      addChangelogEntries(repo, change.declaration);
      commitAll(repo, 'breaking change'); // committed, compared against the commit before

      const { code, output } = await runGuard(repo, 'HEAD~1');

      expect(output).toContain(`${change.finding} — declared in CHANGELOG.md`);
      expect(output).not.toContain('NOT declared');
      expect(code).toBe(0);
    });
  }

  it('when an operation is moved from paths to x-removed-operations, then the removal is declared without a CHANGELOG entry', async () => {
    const repo = scratchRepo();
    breakingChanges[0].apply(repo);
    editYaml(repo, 'openapi/openapi.yaml', (doc) =>
      (doc.get('x-removed-operations') as YAMLSeq).add(
        doc.createNode({ method: 'DELETE', path: '/api/teams/{team}/features/{feature}', removed_in: '9.0.0', replaced_by: null, reason: 'Flags are turned off.' }),
      ),
    );

    const { code, output } = await runGuard(repo, 'HEAD');

    expect(output).toContain('DELETE /api/teams/{team}/features/{feature}: operation removed — declared in x-removed-operations');
    expect(code).toBe(0);
  });

  it('when nothing changed, then it passes with "no breaking changes"', async () => {
    const { code, output } = await runGuard(scratchRepo(), 'HEAD');

    expect(output).toContain('no breaking changes');
    expect(code).toBe(0);
  });

  it('when only an optional request property and a response field are added, then it passes', async () => {
    const repo = scratchRepo();
    editYaml(repo, 'openapi/components/schemas/EventCreate.yaml', (doc) =>
      doc.setIn(['properties', 'label'], { type: 'string', maxLength: 255 }),
    );
    editYaml(repo, 'openapi/components/schemas/User.yaml', (doc) =>
      doc.setIn(['properties', 'avatar_url'], { type: 'string', format: 'uri' }),
    );

    const { code, output } = await runGuard(repo, 'HEAD');

    expect(output).toContain('no breaking changes');
    expect(code).toBe(0);
  });

  it("when an operation gains a response status (the config's 304), then it passes", async () => {
    const configPath = 'openapi/paths/teams_{team}_config.yaml';
    const repo = scratchRepo((dir) => editYaml(dir, configPath, (doc) => doc.deleteIn(['get', 'responses', '304'])));
    cpSync(join(project, configPath), join(repo, configPath));

    const { code, output } = await runGuard(repo, 'HEAD');

    expect(output).toContain('no breaking changes');
    expect(code).toBe(0);
  });

  it("when the values of a response's map may be of a new type, then it fails naming each operation that answers them", async () => {
    const repo = scratchRepo((at) =>
      editYaml(at, 'openapi/components/schemas/Attributes.yaml', (doc) => doc.set('additionalProperties', { type: ['string', 'number', 'boolean'], maxLength: 1000 })),
    );
    editYaml(repo, 'openapi/components/schemas/Attributes.yaml', (doc) =>
      doc.set('additionalProperties', { anyOf: [{ type: ['string', 'number', 'boolean'], maxLength: 1000 }, { type: 'array', items: { type: 'string' } }] }),
    );

    const { code, output } = await runGuard(repo, 'HEAD');

    expect(output).toContain('GET /api/teams/{team}/participants/{participant}: response 200 field data.attributes.* may also be array — NOT declared');
    expect(output).toContain('POST /api/teams/{team}/ingest: response 200 field data.participant.attributes.* may also be array — NOT declared');
    expect(code).toBe(1);
  });

  it("when only a request field's type is widened, then it passes", async () => {
    const repo = scratchRepo();
    editYaml(repo, 'openapi/components/schemas/EventCreate.yaml', (doc) => doc.setIn(['properties', 'key'], { type: ['string', 'number'], maxLength: 64 }));

    const { code, output } = await runGuard(repo, 'HEAD');

    expect(output).toContain('no breaking changes');
    expect(code).toBe(0);
  });

  it('when the only breaking entry naming the operation predates the ref, then the change is not declared', async () => {
    const repo = scratchRepo();
    addChangelogEntries(repo, '- **Modification (breaking):** `GET /api/user` answers with `current_team_id`.');
    commitAll(repo, 'older breaking change');
    removeUserEmail(repo);

    const { code, output } = await runGuard(repo, 'HEAD');

    expect(output).toContain('GET /api/user: response 200 field data.email removed — NOT declared');
    expect(code).toBe(1);
  });

  it('when the new entry names only a longer path starting with the operation path, then it is not declared', async () => {
    const repo = scratchRepo();
    breakingChanges[1].apply(repo);
    addChangelogEntries(repo, '- **Removal (breaking):** 409 on `POST /api/teams/{team}/events/{event}/archive`.');

    const { code, output } = await runGuard(repo, 'HEAD');

    expect(output).toContain('POST /api/teams/{team}/events: response 409 removed — NOT declared');
    expect(code).toBe(1);
  });

  it('when the ref is unknown or missing, then it exits 2 with a usage message', async () => {
    const repo = scratchRepo();

    const unknown = await runGuard(repo, 'no-such-ref');
    const missing = await runGuard(repo);

    expect(unknown.output).toMatch(/unknown git ref: no-such-ref[\s\S]*usage:/);
    expect(unknown.code).toBe(2);
    expect(missing.output).toContain('usage: npm run breaking -- <git-ref>');
    expect(missing.code).toBe(2);
  });
});
