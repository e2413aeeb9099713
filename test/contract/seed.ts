// A small reader of the published interface (the seed markdown), so the contract tests follow
// the document the service must encode instead of a copy of its tables.
import { readFileSync } from 'node:fs';

export const SEED_URL = new URL('../../../shared/seed/experimentation-service-interface.md', import.meta.url);

/** "GET /api/teams/{team}" — the way the seed names an operation. */
export type OperationKey = string;

export interface SeedEndpoint {
  method: string;
  path: string;
  key: OperationKey;
  purpose: string;
}

export interface Seed {
  /** Rows of the "Endpoints" table. */
  endpoints: SeedEndpoint[];
  /** The placeholders the Endpoints section names ("Path parameters are {team}, …"), without braces. */
  pathParameters: string[];
  /** Rows of the "Query parameters" table: operation → parameter names. */
  queryParameters: Map<OperationKey, string[]>;
  /** Rows of the "Request bodies named" table: properties that must exist, and `(no x)` ones that must not. */
  requestBodies: { operation: OperationKey; present: string[]; absent: string[] }[];
  /** The "Removed operations, which must not exist" list. */
  removedOperations: { method: string; path: string; key: OperationKey }[];
  /** Rows of the "Errors" table: a status and the operations it is listed on. */
  errors: { status: string; operations: OperationKey[] }[];
}

const OPERATION = /\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\/api[^\s;,()]*)/g;

/** The text from a `## heading` up to the next `## ` heading. */
function section(lines: string[], heading: string): string[] {
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`);
  if (start < 0) throw new Error(`seed: no section "## ${heading}"`);
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  return lines.slice(start + 1, end < 0 ? lines.length : end);
}

/** The body rows (cells trimmed) of the first table at or after line `from`. */
function tableAt(lines: string[], from: number, what: string): string[][] {
  const start = lines.findIndex((line, i) => i >= from && line.trim().startsWith('|'));
  if (start < 0) throw new Error(`seed: no table for ${what}`);
  const rows: string[][] = [];
  for (let i = start; i < lines.length && lines[i]!.trim().startsWith('|'); i++) {
    rows.push(lines[i]!.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((cell) => cell.trim()));
  }
  const [, separator, ...body] = rows;
  if (!separator?.every((cell) => /^:?-+:?$/.test(cell))) throw new Error(`seed: malformed table for ${what}`);
  return body;
}

function lineIndex(lines: string[], startsWith: string): number {
  const i = lines.findIndex((line) => line.trim().startsWith(startsWith));
  if (i < 0) throw new Error(`seed: no line starting "${startsWith}"`);
  return i;
}

function operationsIn(text: string): { method: string; path: string; key: OperationKey }[] {
  return [...text.matchAll(OPERATION)].map(([key, method, path]) => ({ method: method!, path: path!, key: key! }));
}

function operationKey(cell: string): OperationKey {
  const found = operationsIn(cell);
  if (found.length !== 1 || found[0]!.key !== cell) throw new Error(`seed: "${cell}" is not one operation`);
  return cell;
}

export function parseSeed(markdown: string): Seed {
  const lines = markdown.split(/\r?\n/);
  const endpointsSection = section(lines, 'Endpoints');

  const endpoints = tableAt(endpointsSection, 0, 'Endpoints').map(([method, path, purpose]) => {
    if (!method || !path || purpose === undefined) throw new Error(`seed: short Endpoints row ${method} ${path}`);
    return { method, path, key: operationKey(`${method} ${path}`), purpose };
  });

  const sentence = endpointsSection.find((line) => line.includes('Path parameters are'));
  if (!sentence) throw new Error('seed: no "Path parameters are" sentence');
  const pathParameters = [...sentence.split('Path parameters are')[1]!.split('.')[0]!.matchAll(/\{(\w+)\}/g)].map(
    (m) => m[1]!,
  );

  const queryParameters = new Map<OperationKey, string[]>();
  for (const [operation, parameters] of tableAt(endpointsSection, lineIndex(endpointsSection, 'Query parameters'), 'Query parameters')) {
    queryParameters.set(operationKey(operation!), parameters!.split(',').map((p) => p.trim()).filter(Boolean));
  }

  const requestBodies = tableAt(endpointsSection, lineIndex(endpointsSection, 'Request bodies named'), 'Request bodies').map(
    ([operation, properties]) => {
      const absent = [...properties!.matchAll(/\(no (\w+)\)/g)].map((m) => m[1]!);
      const present = properties!
        .replace(/\(no \w+\)/g, '')
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean);
      return { operation: operationKey(operation!), present, absent };
    },
  );

  const removedFrom = lineIndex(endpointsSection, 'Removed operations');
  const removedOperations: Seed['removedOperations'] = [];
  for (let i = removedFrom + 1; i < endpointsSection.length; i++) {
    const line = endpointsSection[i]!.trim();
    if (line === '' && removedOperations.length === 0) continue;
    if (!line.startsWith('- ')) break;
    const [operation] = operationsIn(line);
    if (!operation || `- ${operation.key}` !== line) throw new Error(`seed: unreadable removed operation "${line}"`);
    removedOperations.push(operation);
  }

  const errors = tableAt(section(lines, 'Errors'), 0, 'Errors').map(([status, where]) => ({
    status: status!,
    operations: operationsIn(where!).map((o) => o.key),
  }));

  return { endpoints, pathParameters, queryParameters, requestBodies, removedOperations, errors };
}

export function readSeed(): Seed {
  return parseSeed(readFileSync(SEED_URL, 'utf8'));
}
