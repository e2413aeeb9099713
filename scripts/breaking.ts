// Breaking-change guard: `npm run breaking -- <git-ref>` compares the contract in the working
// tree with the one at <git-ref> and fails on a breaking change that no CHANGELOG.md entry added
// since <git-ref> declares (an operation removed from `paths` is also declared by adding it to
// the document's `x-removed-operations`). Exit 0: none undeclared; 1: some undeclared; 2: usage or setup error.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';

type Json = any; // a dereferenced OpenAPI document, walked loosely
type Finding = { operation: string; message: string };
/** Property paths in a schema (`body.key`, `data[].id`) → whether required, every path where a schema sits, and the enums there. */
interface Fields {
  properties: Map<string, boolean>;
  locations: Set<string>;
  /** path → the values its enums allow (JSON), when a schema there has an enum. */
  enums: Map<string, Set<string>>;
  /** path → the JSON types its schemas allow, when a schema there states `type`. */
  types: Map<string, Set<string>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const redocly = join(import.meta.dirname, '..', 'node_modules/.bin/redocly');

async function bundleDereferenced(cwd: string, output: string): Promise<Json> {
  await promisify(execFile)(redocly, ['bundle', 'main', '--dereferenced', '-o', output], {
    cwd,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  // YAML, not JSON: a recursive schema (a condition holds conditions) is written as an anchor and its aliases.
  return parse(readFileSync(output, 'utf8'), { maxAliasCount: -1 });
}

function git(args: string[]): Buffer {
  return execFileSync('git', args, { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
}

function extractContractAt(ref: string, dir: string): void {
  mkdirSync(dir);
  const archive = git(['archive', ref, 'openapi', 'redocly.yaml']);
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
}

function isCommit(ref: string): boolean {
  try {
    git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

function changelogAt(ref: string): string {
  try {
    return git(['show', `${ref}:CHANGELOG.md`]).toString('utf8');
  } catch {
    return '';
  }
}

function operationsOf(doc: Json): Map<string, Json> {
  const operations = new Map<string, Json>();
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      if (item?.[method]) operations.set(`${method.toUpperCase()} ${path}`, item[method]);
    }
  }
  return operations;
}

function collectFields(
  schema: Json,
  at: string,
  fields: Fields = { properties: new Map(), locations: new Set(), enums: new Map(), types: new Map() },
  onPath = new Set<Json>(),
): Fields {
  if (!schema || typeof schema !== 'object' || onPath.has(schema)) return fields;
  onPath.add(schema);
  fields.locations.add(at);
  if (Array.isArray(schema.enum)) {
    const allowed = fields.enums.get(at) ?? new Set<string>();
    for (const value of schema.enum) allowed.add(JSON.stringify(value));
    fields.enums.set(at, allowed);
  }
  if (schema.type !== undefined) {
    const types = fields.types.get(at) ?? new Set<string>();
    for (const type of [schema.type].flat()) types.add(type === 'integer' ? 'number' : type);
    fields.types.set(at, types);
  }
  const child = (name: string) => (at ? `${at}.${name}` : name);
  const required: string[] = Array.isArray(schema.required) ? schema.required : [];
  // A property may be declared in one allOf branch and required in another: required wins.
  for (const name of required) fields.properties.set(child(name), true);
  for (const [name, sub] of Object.entries<Json>(schema.properties ?? {})) {
    fields.properties.set(child(name), fields.properties.get(child(name)) ?? false);
    collectFields(sub, child(name), fields, onPath);
  }
  collectFields(schema.items, `${at}[]`, fields, onPath);
  // The values of a map (`attributes.*`): each named by `*`.
  if (typeof schema.additionalProperties === 'object') collectFields(schema.additionalProperties, `${at}.*`, fields, onPath);
  for (const branch of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) {
    collectFields(branch, at, fields, onPath);
  }
  onPath.delete(schema);
  return fields;
}

/** `data[].email` → `data[]`: the path of the schema that holds the property. */
function containerOf(path: string): string {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? '' : path.slice(0, dot);
}

function newlyRequiredFields(before: Json, after: Json): string[] {
  const old = collectFields(before, 'body');
  const now = collectFields(after, 'body');
  // A required property inside a newly added (optional) object does not affect existing clients.
  const existedBefore = (path: string) => path === 'body' || old.locations.has(path);
  return [...now.properties]
    .filter(([path, required]) => required && !old.properties.get(path))
    .filter(([path]) => existedBefore(containerOf(path)))
    .map(([path]) => path);
}

function removedFields(before: Json, after: Json): string[] {
  const now = collectFields(after, '').properties;
  const removed = [...collectFields(before, '').properties.keys()].filter((path) => !now.has(path));
  const removedSet = new Set(removed);
  // Name only the outermost removed property, not everything that was inside it.
  return removed.filter((path) => !removedSet.has(containerOf(path).replace(/(\[\])+$/, '')));
}

/** `body.type: enum value "count" removed`: values clients may send that are no longer accepted. */
function narrowedEnums(before: Json, after: Json, at: string): string[] {
  const now = collectFields(after, at).enums;
  return [...collectFields(before, at).enums].flatMap(([path, allowed]) => {
    const still = now.get(path);
    const removed = still ? [...allowed].filter((value) => !still.has(value)) : [];
    return removed.length > 0 ? [`${path}: enum value ${removed.join(', ')} removed`] : [];
  });
}

function compareRequest(before: Json, after: Json): string[] {
  const oldContent = before?.requestBody?.content ?? {};
  const messages = new Set<string>();
  for (const [mediaType, media] of Object.entries<Json>(after?.requestBody?.content ?? {})) {
    // A new alternative media type is additive: clients keep sending the one they already use.
    if (before?.requestBody && !(mediaType in oldContent)) continue;
    for (const path of newlyRequiredFields(oldContent[mediaType]?.schema, media.schema)) {
      messages.add(`request field ${path} became required`);
    }
    for (const narrowed of narrowedEnums(oldContent[mediaType]?.schema, media.schema, 'body')) messages.add(`request field ${narrowed}`);
  }
  return [...messages];
}

/** Parameters a client sends that are gone, became required, or accept fewer values. */
function compareParameters(before: Json, after: Json): string[] {
  const byKey = (operation: Json) => new Map<string, Json>((operation.parameters ?? []).map((p: Json) => [`${p.in} parameter ${p.name}`, p]));
  const now = byKey(after);
  const messages: string[] = [];
  for (const [key, old] of byKey(before)) {
    const current = now.get(key);
    if (!current) messages.push(`${key} removed`);
    else if (current.required && !old.required) messages.push(`${key} became required`);
    if (current) messages.push(...narrowedEnums(old.schema, current.schema, key).map((narrowed) => narrowed.replace(`${key}[]`, key)));
  }
  for (const [key, added] of now) if (added.required && !byKey(before).has(key)) messages.push(`${key} added as required`);
  return messages;
}

/** `data.attributes.*: may also be array`: types a response field may now have that clients were not told of. */
function widenedTypes(before: Json, after: Json): string[] {
  const now = collectFields(after, '').types;
  return [...collectFields(before, '').types].flatMap(([path, types]) => {
    const added = [...(now.get(path) ?? [])].filter((type) => !types.has(type));
    return added.length > 0 ? [`${path} may also be ${added.join(', ')}`] : [];
  });
}

function compareResponses(before: Json, after: Json): string[] {
  const messages = new Set<string>();
  for (const [status, oldResponse] of Object.entries<Json>(before.responses ?? {})) {
    const newResponse = after.responses?.[status];
    if (!newResponse) {
      messages.add(`response ${status} removed`);
      continue;
    }
    for (const [mediaType, media] of Object.entries<Json>(oldResponse.content ?? {})) {
      for (const path of removedFields(media.schema, newResponse.content?.[mediaType]?.schema)) {
        messages.add(`response ${status} field ${path} removed`);
      }
      for (const widened of widenedTypes(media.schema, newResponse.content?.[mediaType]?.schema)) {
        messages.add(`response ${status} field ${widened}`);
      }
    }
  }
  return [...messages];
}

function breakingChanges(before: Json, after: Json): Finding[] {
  const now = operationsOf(after);
  const findings: Finding[] = [];
  for (const [operation, oldOperation] of operationsOf(before)) {
    const newOperation = now.get(operation);
    const messages = newOperation
      ? [...compareParameters(oldOperation, newOperation), ...compareRequest(oldOperation, newOperation), ...compareResponses(oldOperation, newOperation)]
      : ['operation removed'];
    findings.push(...messages.map((message) => ({ operation, message })));
  }
  return findings;
}

/** Markdown list items, each with the lines indented under it, whitespace collapsed. */
function changelogEntries(markdown: string): string[] {
  const lines = markdown.split(/\r?\n/);
  const indent = (line: string) => line.length - line.trimStart().length;
  const entries: string[] = [];
  lines.forEach((line, start) => {
    if (!/^\s*([-*+]|\d+[.)])\s/.test(line)) return;
    let end = start + 1;
    while (end < lines.length && (lines[end].trim() === '' || indent(lines[end]) > indent(line))) end++;
    entries.push(lines.slice(start, end).join(' ').replace(/\s+/g, ' ').trim());
  });
  return entries;
}

function namesOperation(entry: string, operation: string): boolean {
  const escaped = operation.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // The path must end there: `POST /a/{b}` is not named by `POST /a/{b}/archive`.
  return new RegExp(`(^|[^A-Za-z])${escaped}(?![\\w{}/-])`).test(entry);
}

function declaringEntries(changelogBefore: string, changelogNow: string): string[] {
  const old = new Set(changelogEntries(changelogBefore));
  return changelogEntries(changelogNow).filter((entry) => !old.has(entry) && /breaking/i.test(entry));
}

/** `METHOD /path` of the removals the document's `x-removed-operations` lists now and did not at the ref. */
function listedRemovals(before: Json, after: Json): Set<string> {
  const listed = (doc: Json) => (doc['x-removed-operations'] ?? []).map((removed: Json) => `${removed.method} ${removed.path}`);
  const old = new Set(listed(before));
  return new Set(listed(after).filter((key: string) => !old.has(key)));
}

/** Prints the findings and answers the exit code: 1 when any is undeclared. */
function report(ref: string, findings: Finding[], declarations: string[], removals: Set<string>): number {
  if (findings.length === 0) {
    console.log(`no breaking changes since ${ref}`);
    return 0;
  }
  console.log(`breaking changes since ${ref}:`);
  let undeclared = 0;
  for (const { operation, message } of findings) {
    // An operation moved from paths to x-removed-operations is a removal the document itself declares.
    const listed = message === 'operation removed' && removals.has(operation);
    const declared = listed || declarations.some((entry) => namesOperation(entry, operation));
    if (!declared) undeclared++;
    console.log(`  ${operation}: ${message} — ${listed ? 'declared in x-removed-operations' : declared ? 'declared in CHANGELOG.md' : 'NOT declared'}`);
  }
  if (undeclared === 0) return 0;
  console.log(`${undeclared} undeclared: add a CHANGELOG.md entry marked Breaking naming each as \`METHOD /path\`.`);
  return 1;
}

async function main(ref: string | undefined): Promise<number> {
  if (!ref || !isCommit(ref)) {
    if (ref) console.error(`unknown git ref: ${ref}`);
    console.error('usage: npm run breaking -- <git-ref>');
    return 2;
  }
  const scratch = mkdtempSync(join(tmpdir(), 'breaking-'));
  try {
    extractContractAt(ref, join(scratch, 'old'));
    const [before, after] = await Promise.all([
      bundleDereferenced(join(scratch, 'old'), join(scratch, 'old.yaml')),
      bundleDereferenced(process.cwd(), join(scratch, 'new.yaml')),
    ]);
    const changelogNow = existsSync('CHANGELOG.md') ? readFileSync('CHANGELOG.md', 'utf8') : '';
    return report(ref, breakingChanges(before, after), declaringEntries(changelogAt(ref), changelogNow), listedRemovals(before, after));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

try {
  process.exitCode = await main(process.argv[2]);
} catch (error) {
  console.error(`breaking: ${(error as Error).message}`);
  process.exitCode = 2;
}
