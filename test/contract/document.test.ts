// Proves that the bundled contract (generated/openapi.json) encodes the published interface
// (transcribed as data in test/contract/interface.ts) and keeps the document's own rules: closed, typed and
// bounded schemas, problem-details errors, and examples that validate.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { ADDED_PATH_PARAMETERS, ADDITIONS, INTERFACE, type OperationKey } from './interface';

// ---------------------------------------------------------------------------------------------
// The document and a few helpers to navigate it
// ---------------------------------------------------------------------------------------------

/** A JSON object of the document (a schema, an operation, a response, …). */
type Node = { [key: string]: any };
/** A JSON pointer into the document, as a `$ref` writes it: `#/components/schemas/Key`. */
type Pointer = string;

const doc: Node = JSON.parse(readFileSync(new URL('../../generated/openapi.json', import.meta.url), 'utf8'));
const published = INTERFACE;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const HEALTH: OperationKey = 'GET /api/health';
const INGEST: OperationKey = 'POST /api/teams/{team}/ingest';
const INGEST_BATCH: OperationKey = 'POST /api/teams/{team}/ingest/batch';
const EVALUATE: OperationKey = 'POST /api/teams/{team}/evaluate';
/** Its 200 is an endless stream of Server-Sent Events, not a JSON body. */
const CONFIG_STREAM: OperationKey = 'GET /api/teams/{team}/config/stream';
const OFREP_EVENT_STREAM: OperationKey = 'GET /api/teams/{team}/ofrep/v1/event-stream';
const STREAMS = [CONFIG_STREAM, OFREP_EVENT_STREAM];
const EVENT_STREAM_BODY: Pointer = '#/components/responses/ConfigStream/content/text~1event-stream/schema';
/** Every operation the document must have: the published interface's and our additions. */
const ALL = published.endpoints.length + ADDITIONS.length;
const JSON_MEDIA = 'application/json';
const VND_MEDIA = 'application/vnd.api+json';
const PROBLEM_MEDIA = 'application/problem+json';
const PROBLEM: Pointer = '#/components/schemas/Problem';

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);

function child(pointer: Pointer, ...segments: (string | number)[]): Pointer {
  return pointer + segments.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

function at(pointer: Pointer): unknown {
  if (!pointer.startsWith('#')) throw new Error(`not an internal pointer: ${pointer}`);
  let node: unknown = doc;
  for (const raw of pointer.slice(1).split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = isNode(node) || Array.isArray(node) ? (node as Node)[segment] : undefined;
    if (node === undefined) throw new Error(`unresolvable pointer ${pointer}`);
  }
  return node;
}

/** Follows `$ref`s (internal only) to the node they name; keeps the pointer of where it is. */
function deref(node: Node, pointer: Pointer): { node: Node; pointer: Pointer } {
  const seen = new Set<Pointer>();
  while (typeof node.$ref === 'string') {
    if (!node.$ref.startsWith('#/')) throw new Error(`external $ref ${node.$ref} at ${pointer}`);
    if (seen.has(node.$ref)) throw new Error(`$ref cycle at ${pointer}`);
    seen.add(node.$ref);
    pointer = node.$ref;
    const target = at(pointer);
    if (!isNode(target)) throw new Error(`$ref ${pointer} is not an object`);
    node = target;
  }
  return { node, pointer };
}

const typesOf = (schema: Node): string[] =>
  Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : [];
const isObjectSchema = (schema: Node) =>
  typesOf(schema).includes('object') || isNode(schema.properties) || 'additionalProperties' in schema;

// ---------------------------------------------------------------------------------------------
// Operations, parameters, bodies and responses
// ---------------------------------------------------------------------------------------------

interface Located {
  node: Node;
  pointer: Pointer;
}
interface Operation {
  key: OperationKey;
  method: string;
  path: string;
  op: Node;
  pointer: Pointer;
  /** Path-level and operation-level parameters, resolved; the operation's win. */
  parameters: Located[];
  requestBody?: Located;
  responses: (Located & { status: string })[];
}

const operations: Operation[] = Object.entries(doc.paths as Node).flatMap(([path, pathItem]) =>
  HTTP_METHODS.filter((method) => isNode(pathItem[method])).map((method) => {
    const pointer = child('#/paths', path, method);
    const op: Node = pathItem[method];
    const byName = new Map<string, Located>();
    const add = (list: unknown, base: Pointer) =>
      (Array.isArray(list) ? list : []).forEach((p: Node, i) => {
        const located = deref(p, child(base, 'parameters', i));
        byName.set(`${located.node.in}:${located.node.name}`, located);
      });
    add(pathItem.parameters, child('#/paths', path));
    add(op.parameters, pointer);
    return {
      key: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      op,
      pointer,
      parameters: [...byName.values()],
      requestBody: isNode(op.requestBody) ? deref(op.requestBody, child(pointer, 'requestBody')) : undefined,
      responses: Object.entries((op.responses ?? {}) as Node).map(([status, response]) => ({
        status,
        ...deref(response, child(pointer, 'responses', status)),
      })),
    };
  }),
);
const operationByKey = new Map(operations.map((o) => [o.key, o]));

/**
 * The one exception to the document's rules: OFREP's operations (`x-ofrep`) answer a foreign
 * standard's bodies — their 200s have no `data` envelope, and their OFREP error statuses
 * (400, 404 for one flag, 500) answer OFREP's error bodies as application/json. Only operations
 * under OFREP_PREFIX may carry the extension (checked in 4.), so no other path can use it.
 */
const OFREP_PREFIX = '/api/teams/{team}/ofrep/v1/';
const isOfrep = (operation: { op: Node }) => operation.op['x-ofrep'] !== undefined;
const ofrepErrorStatuses = (operation: { op: Node }): string[] => (operation.op['x-ofrep'] === 'flag' ? ['400', '404', '500'] : operation.op['x-ofrep'] === 'flags' ? ['400', '500'] : []);
/** The value of a `json` flag in an OFREP answer: the object the team wrote, open by nature. */
const OFREP_OPEN_VALUES: Pointer[] = ['OfrepObjectValue', 'OfrepJsonValue', 'OfrepJsonItem', 'OfrepJsonLeaf'].map((name) => `#/components/schemas/${name}`);
const operationRows = operations.map((o) => [o.key, o] as [OperationKey, Operation]);

interface Media {
  mediaType: string;
  media: Node;
  pointer: Pointer;
}
function mediaOf(container: Located): Media[] {
  return Object.entries((container.node.content ?? {}) as Node).map(([mediaType, media]) => ({
    mediaType,
    media,
    pointer: child(container.pointer, 'content', mediaType),
  }));
}

function uniqueByPointer<T extends { pointer: Pointer }>(items: T[]): T[] {
  const seen = new Map<Pointer, T>();
  for (const item of items) if (!seen.has(item.pointer)) seen.set(item.pointer, item);
  return [...seen.values()];
}
const componentsOf = (kind: string): Located[] =>
  Object.entries((doc.components?.[kind] ?? {}) as Node).map(([name, node]) =>
    deref(node, child('#/components', kind, name)),
  );

/** Every parameter of the document: the components' and the inline ones. */
const allParameters = uniqueByPointer([...componentsOf('parameters'), ...operations.flatMap((o) => o.parameters)]);
/** Every request body and response of the document: the components' and the inline ones. */
const allRequestBodies = uniqueByPointer([
  ...componentsOf('requestBodies'),
  ...operations.flatMap((o) => (o.requestBody ? [o.requestBody] : [])),
]);
const allResponses = uniqueByPointer([...componentsOf('responses'), ...operations.flatMap((o) => o.responses)]);
const requestMedia = uniqueByPointer(allRequestBodies.flatMap(mediaOf));
const responseMedia = uniqueByPointer(allResponses.flatMap(mediaOf));
const responseHeaders = allResponses.flatMap((r) =>
  Object.entries((r.node.headers ?? {}) as Node).map(([name, header]) => deref(header, child(r.pointer, 'headers', name))),
);

// ---------------------------------------------------------------------------------------------
// Walking schemas
// ---------------------------------------------------------------------------------------------

const SINGLE_SUBSCHEMAS = [
  'additionalProperties',
  'unevaluatedProperties',
  'items',
  'additionalItems',
  'unevaluatedItems',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
  'contentSchema',
];
const LIST_SUBSCHEMAS = ['prefixItems', 'allOf', 'anyOf', 'oneOf'];
const MAP_SUBSCHEMAS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'];

interface SchemaVisit {
  /** A schema; `true`/`false` for boolean schemas. */
  schema: Node | boolean;
  pointer: Pointer;
  /** The name of the property this schema (or the `$ref` that led to it) describes. */
  property?: string;
}

function subschemas(schema: Node, pointer: Pointer, property?: string): SchemaVisit[] {
  const found: SchemaVisit[] = [];
  for (const keyword of SINGLE_SUBSCHEMAS) {
    const value = schema[keyword];
    if (isNode(value) || typeof value === 'boolean') found.push({ schema: value, pointer: child(pointer, keyword) });
  }
  for (const keyword of LIST_SUBSCHEMAS) {
    // Branches of a combinator describe the same value, so they describe the same property.
    if (Array.isArray(schema[keyword]))
      schema[keyword].forEach((s: Node, i: number) => found.push({ schema: s, pointer: child(pointer, keyword, i), property }));
  }
  for (const keyword of MAP_SUBSCHEMAS) {
    if (isNode(schema[keyword]))
      for (const [name, s] of Object.entries(schema[keyword] as Node))
        found.push({ schema: s, pointer: child(pointer, keyword, name), property: keyword === 'properties' ? name : undefined });
  }
  return found;
}

/**
 * Every schema reachable from the roots, each once (per property context), following `$ref`s into
 * the document. A `$ref` node is visited itself and its target with the same property name.
 */
function walk(roots: SchemaVisit[]): SchemaVisit[] {
  const visited = new Map<string, SchemaVisit>();
  const queue = [...roots];
  while (queue.length > 0) {
    const visit = queue.shift()!;
    const id = `${visit.pointer}|${visit.property === 'attributes' ? 'attributes' : ''}`;
    if (visited.has(id)) continue;
    visited.set(id, visit);
    if (!isNode(visit.schema)) continue;
    if (typeof visit.schema.$ref === 'string') {
      const target = deref({ $ref: visit.schema.$ref }, visit.pointer);
      queue.push({ schema: target.node, pointer: target.pointer, property: visit.property });
    }
    queue.push(...subschemas(visit.schema, visit.pointer, visit.property));
  }
  return [...visited.values()];
}

const schemaRoot = (container: { node?: Node; media?: Node; pointer: Pointer }): SchemaVisit[] => {
  const node = container.media ?? container.node!;
  return isNode(node.schema) || typeof node.schema === 'boolean'
    ? [{ schema: node.schema, pointer: child(container.pointer, 'schema') }]
    : [];
};
const parameterSchemaRoots = allParameters.flatMap((p) => [...schemaRoot(p), ...mediaOf(p).flatMap(schemaRoot)]);
const requestSchemaRoots = requestMedia.flatMap(schemaRoot);
const responseSchemaRoots = [...responseMedia.flatMap(schemaRoot), ...responseHeaders.flatMap(schemaRoot)];
const componentSchemaRoots: SchemaVisit[] = Object.entries((doc.components?.schemas ?? {}) as Node).map(
  ([name, schema]) => ({ schema, pointer: child('#/components/schemas', name) }),
);

/** Every schema node reachable from the paths and the components, once each. */
const allSchemas = uniqueByPointer(
  walk([...componentSchemaRoots, ...parameterSchemaRoots, ...requestSchemaRoots, ...responseSchemaRoots]),
);
const schemaNodes = allSchemas.filter((v): v is SchemaVisit & { schema: Node } => isNode(v.schema));
/** Schemas that describe request input: parameters and request bodies. */
const requestInputSchemas = walk([...parameterSchemaRoots, ...requestSchemaRoots]);

/** The open-object exception: a participant's `attributes` (additional values string/number/boolean). */
const isAttributes = (visit: SchemaVisit) => visit.property === 'attributes';
/** The condition language's objects: their keys are attribute paths or operators, every value typed by `additionalProperties` (a schema, or false). */
const isConditionObject = (visit: SchemaVisit) =>
  visit.pointer.startsWith('#/components/schemas/Condition') && isNode(visit.schema) && 'additionalProperties' in visit.schema && visit.schema.additionalProperties !== true;
/** An attribute's value: a scalar, or an array of scalars — never an object or a nested array. */
const attributeValueShapes = (values: unknown): string[] => {
  const branches = isNode(values) && Array.isArray(values.anyOf) ? (values.anyOf as Node[]) : [values as Node];
  return branches.map((branch) =>
    typesOf(branch).includes('array') ? `array of ${[...typesOf(branch.items as Node)].sort().join(', ')}` : [...typesOf(branch)].sort().join(', '),
  );
};
const ATTRIBUTE_VALUE_SHAPES = ['boolean, number, string', 'array of boolean, number, string'];
/**
 * A map, not an open object: keys constrained by `propertyNames`, values by an
 * `additionalProperties` schema (a rule's value per variant, an evaluation's flags by key).
 */
const isKeyedMap = (visit: SchemaVisit) => isNode(visit.schema) && isNode(visit.schema.propertyNames) && isNode(visit.schema.additionalProperties);
/** A field of an audited resource, before or after a change: any value its own schema (named by the entry's resource_type) allows. */
const isAuditFieldValue = (visit: SchemaVisit) => visit.pointer.startsWith('#/components/schemas/AuditFieldValue');

// ---------------------------------------------------------------------------------------------
// Validation with Ajv over the whole document
// ---------------------------------------------------------------------------------------------

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'doc');
const compiled = new Map<Pointer, ValidateFunction>();
function validatorAt(pointer: Pointer): ValidateFunction {
  let validate = compiled.get(pointer);
  if (!validate) {
    const fragment = pointer.slice(1).split('/').map(encodeURIComponent).join('/');
    validate = ajv.compile({ $ref: `doc#${fragment}` });
    compiled.set(pointer, validate);
  }
  return validate;
}

const jsonSchemaOf = (operation: Operation, mediaType = JSON_MEDIA) =>
  mediaOf(operation.requestBody!).find((m) => m.mediaType === mediaType)!;

// =============================================================================================
// 0. The interface table is complete
// =============================================================================================

describe('the published interface as transcribed (test/contract/interface.ts)', () => {
  it('lists 38 endpoints, the six path parameters, eight query-parameter rows and seven removed operations', () => {
    expect(published.endpoints).toHaveLength(38);
    expect(new Set(published.endpoints.map((e) => e.key)).size).toBe(38);
    expect(published.pathParameters).toEqual(['team', 'event', 'experiment', 'variant', 'feature', 'participant']);
    expect(published.queryParameters.size).toBe(8);
    expect(published.removedOperations).toHaveLength(7);
    expect(published.requestBodies).toHaveLength(2);
    expect(published.errors.map((e) => e.status)).toEqual(['401', '402', '403', '404', '500', '200']);
  });

  it('names only operations of its Endpoints table in its other tables', () => {
    const known = new Set(published.endpoints.map((e) => e.key));
    const named = [
      ...published.queryParameters.keys(),
      ...published.requestBodies.map((b) => b.operation),
      ...published.errors.flatMap((e) => e.operations),
      HEALTH,
      INGEST,
    ];
    expect(named.filter((key) => !known.has(key))).toEqual([]);
  });
});

// =============================================================================================
// 1. Operations and path parameters
// =============================================================================================

describe('1. operations and path parameters', () => {
  it.each(published.endpoints.map((e) => [e.key, e.purpose]))('when the interface lists %s (%s), then the document has it', (key) => {
    expect(operationByKey.has(key)).toBe(true);
  });

  it('when the document is read, then it has exactly the 38 operations of the interface, our additions (CHANGELOG) and no other under /api', () => {
    expect(operations).toHaveLength(ALL);
    expect(operations.map((o) => o.key).sort()).toEqual([...published.endpoints, ...ADDITIONS].map((e) => e.key).sort());
    const changelog = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
    for (const addition of ADDITIONS) expect(changelog).toMatch(new RegExp(`\\*\\*Addition:\\*\\* \`${addition.key.replace(/[{}/]/g, '\\$&')}\``));
    expect(Object.keys(doc.paths).filter((path) => !path.startsWith('/api/'))).toEqual([]);
  });

  it.each(operationRows)('%s: its path parameters are exactly its placeholders, in: path and required', (_key, operation) => {
    const placeholders = [...operation.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    expect(placeholders.filter((name) => !published.pathParameters.includes(name) && !ADDED_PATH_PARAMETERS.includes(name))).toEqual([]);
    const pathParameters = operation.parameters.filter((p) => p.node.in === 'path');
    expect(pathParameters.map((p) => p.node.name).sort()).toEqual([...placeholders].sort());
    for (const p of pathParameters) expect(p.node.required, `${p.node.name} required`).toBe(true);
    // a placeholder must not be declared under another `in` instead
    const misplaced = operation.parameters.filter((p) => p.node.in !== 'path' && placeholders.includes(p.node.name));
    expect(misplaced.map((p) => `${p.node.in}:${p.node.name}`)).toEqual([]);
  });
});

// =============================================================================================
// 2. Query parameters
// =============================================================================================

describe('2. query parameters', () => {
  const rows = [...published.queryParameters].flatMap(([key, names]) => names.map((name) => [key, name] as [string, string]));

  it('the interface names 11 query parameters on 8 operations', () => {
    expect(rows).toHaveLength(11);
  });

  it.each(rows)('when the interface lists it, then %s declares the query parameter %s', (key, name) => {
    const operation = operationByKey.get(key);
    expect(operation, key).toBeDefined();
    const parameter = operation!.parameters.find((p) => p.node.name === name);
    expect(parameter, `${key} ${name}`).toBeDefined();
    expect(parameter!.node.in).toBe('query');
  });
});

// =============================================================================================
// 3. Removed things, headers and security
// =============================================================================================

describe('3. removed operations and properties, headers, security', () => {
  it.each(published.removedOperations.map((r) => [r.key, r]))('the removed operation %s is absent', (_key, removed) => {
    expect(doc.paths[removed.path]?.[removed.method.toLowerCase()]).toBeUndefined();
    expect(operationByKey.has(removed.key)).toBe(false);
  });

  const listed: Array<{ method: string; path: string; removed_in: string; replaced_by: { method: string; path: string; how: string } | null; reason: string }> =
    doc['x-removed-operations'];

  it('the root extension x-removed-operations lists exactly the removed operations of the interface, none of them a path of the document', () => {
    expect(listed.map((r) => `${r.method} ${r.path}`).sort()).toEqual(published.removedOperations.map((r) => r.key).sort());
    expect(listed.filter((r) => r.path in doc.paths)).toEqual([]);
  });

  it('each listed removal names the version that removed it, a version of the changelog, and its replacement — an operation of the document — or, with none, why', () => {
    const changelog = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
    for (const removed of listed) {
      expect(changelog, removed.path).toContain(`— ${removed.removed_in}\n`);
      expect(changelog, removed.path).toContain(`\`${removed.method} ${removed.path}\``);
      expect(removed.reason.length, removed.path).toBeGreaterThan(10);
      if (removed.replaced_by) expect(operationByKey.has(`${removed.replaced_by.method} ${removed.replaced_by.path}` as OperationKey), removed.path).toBe(true);
    }
    expect(listed.filter((r) => r.replaced_by).map((r) => r.path.split('/').pop())).toEqual(['enroll', 'impressions', 'hit']);
  });

  it('the description has a "Removed operations" section with a row for each listed removal, and says the extension exists', () => {
    const description: string = doc.info.description;
    const section = description.slice(description.indexOf('\n## Removed operations\n'));
    expect(section).toContain('`x-removed-operations`');
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    expect(rows).toEqual(listed.map((r) => expect.stringContaining(`| \`${r.method} ${r.path}\` | ${r.removed_in} | `)));
  });

  it('the team parameter and the config say the same of a team the credential does not reach: 404 everywhere, 403 on the config', () => {
    const team = doc.components.parameters.TeamParameter.description as string;
    expect(team).toMatch(/does\s+not reach answers as an unknown one \(404\) on every operation but the team config, which answers\s+a valid credential of another team 403/);
    const config = operationByKey.get('GET /api/teams/{team}/config' as OperationKey)!;
    const responseOf = (status: string) => config.responses.find((r) => r.status === status)!.node;
    expect(responseOf('403').description).toMatch(/belongs to another team/);
    expect(responseOf('404').description).not.toMatch(/reaches\./);
    const teamNotFoundUsers = operations.filter((o) => o.op.responses['404']?.$ref === '#/components/responses/TeamNotFound').map((o) => o.key);
    expect(teamNotFoundUsers).not.toContain('GET /api/teams/{team}/config');
  });

  const FORBIDDEN_PROPERTIES = ['algorithm_type', 'jsonapi', 'included'];
  it('when every schema is walked, then none names algorithm_type, jsonapi or included as a property', () => {
    const offending: string[] = [];
    for (const { schema, pointer } of schemaNodes) {
      const names = [
        ...Object.keys(isNode(schema.properties) ? schema.properties : {}),
        ...(Array.isArray(schema.required) ? schema.required : []),
        ...Object.keys(isNode(schema.dependentRequired) ? schema.dependentRequired : {}),
        ...Object.keys(isNode(schema.dependentSchemas) ? schema.dependentSchemas : {}),
      ];
      for (const name of names) if (FORBIDDEN_PROPERTIES.includes(name)) offending.push(`${pointer}: ${name}`);
    }
    expect(offending).toEqual([]);
    // the walk reached every component schema, and the properties inside them
    for (const name of Object.keys(doc.components.schemas))
      expect(allSchemas.some((v) => v.pointer === child('#/components/schemas', name)), name).toBe(true);
    expect(schemaNodes.filter((v) => /\/properties\/[^/]+$/.test(v.pointer)).length).toBeGreaterThan(100);
  });

  const FORBIDDEN_HEADERS = ['authorization', 'content-type', 'accept'];
  it.each(operationRows)('%s: declares no Authorization, Content-Type or Accept header parameter', (_key, operation) => {
    const headers = operation.parameters.filter((p) => p.node.in === 'header');
    expect(headers.filter((p) => FORBIDDEN_HEADERS.includes(String(p.node.name).toLowerCase()))).toEqual([]);
  });

  it('no parameter anywhere in the document is an Authorization, Content-Type or Accept header', () => {
    expect(allParameters.length).toBeGreaterThanOrEqual(10);
    const offending = allParameters.filter(
      (p) => p.node.in === 'header' && FORBIDDEN_HEADERS.includes(String(p.node.name).toLowerCase()),
    );
    expect(offending.map((p) => p.pointer)).toEqual([]);
  });

  it('components.securitySchemes exists and is not empty', () => {
    expect(isNode(doc.components.securitySchemes)).toBe(true);
    expect(Object.keys(doc.components.securitySchemes).length).toBeGreaterThan(0);
  });

  const secured = operationRows.filter(([key]) => key !== HEALTH);
  it(`${ALL - 1} operations (all but health) are checked for security`, () => {
    expect(secured).toHaveLength(ALL - 1);
  });

  it.each(secured)('%s: requires a security scheme', (_key, operation) => {
    const requirements: unknown = operation.op.security ?? doc.security;
    expect(Array.isArray(requirements)).toBe(true);
    const list = requirements as Node[];
    expect(list.length).toBeGreaterThan(0);
    for (const requirement of list) {
      // an empty requirement `{}` would make the credential optional
      expect(Object.keys(requirement).length, JSON.stringify(list)).toBeGreaterThan(0);
      for (const scheme of Object.keys(requirement)) expect(doc.components.securitySchemes).toHaveProperty([scheme]);
    }
  });

  it(`${HEALTH}: names only defined security schemes`, () => {
    const list = (operationByKey.get(HEALTH)!.op.security ?? doc.security ?? []) as Node[];
    for (const requirement of list)
      for (const scheme of Object.keys(requirement)) expect(doc.components.securitySchemes).toHaveProperty([scheme]);
  });
});

// =============================================================================================
// 4. Responses and operation metadata
// =============================================================================================

describe('4. responses and operation metadata', () => {
  const statusOf = (operation: Operation, status: string) => operation.responses.find((r) => r.status === status);

  it(`${CONFIG_STREAM}: has a 200 that is text/event-stream (a string) alone, and no other 2xx`, () => {
    const operation = operationByKey.get(CONFIG_STREAM)!;
    const media = mediaOf(statusOf(operation, '200')!);
    expect(media.map((m) => [m.mediaType, deref(m.media.schema, child(m.pointer, 'schema')).pointer])).toEqual([['text/event-stream', EVENT_STREAM_BODY]]);
    expect(typesOf(at(EVENT_STREAM_BODY) as Node)).toEqual(['string']);
    expect(operation.responses.map((r) => r.status).filter((s) => /^2/.test(s))).toEqual(['200']);
  });

  it(`${OFREP_EVENT_STREAM}: has a 200 that is text/event-stream (a string) alone, and no other 2xx`, () => {
    const operation = operationByKey.get(OFREP_EVENT_STREAM)!;
    const media = mediaOf(statusOf(operation, '200')!);
    expect(media.map((m) => m.mediaType)).toEqual(['text/event-stream']);
    expect(typesOf(deref(media[0]!.media.schema, child(media[0]!.pointer, 'schema')).node)).toEqual(['string']);
    expect(operation.responses.map((r) => r.status).filter((s) => /^2/.test(s))).toEqual(['200']);
  });

  it('only operations under /api/teams/{team}/ofrep/v1/ carry x-ofrep, and both OFREP evaluations do (its event stream is an event stream)', () => {
    expect(operations.filter(isOfrep).map((o) => o.key).sort()).toEqual([`POST ${OFREP_PREFIX}evaluate/flags`, `POST ${OFREP_PREFIX}evaluate/flags/{feature}`]);
    expect(operations.filter((o) => o.path.startsWith(OFREP_PREFIX) && !isOfrep(o)).map((o) => o.key)).toEqual([OFREP_EVENT_STREAM]);
    expect(doc.info.description).toMatch(/`x-ofrep`[^]*only operations under `\/api\/teams\/\{team\}\/ofrep\/v1\/`/);
  });

  it.each(operationRows.filter(([, o]) => isOfrep(o)))('%s: has a 200 whose JSON body is OFREP\'s, without `data`, and its OFREP errors are OFREP error bodies', (_key, operation) => {
    const media = mediaOf(statusOf(operation, '200')!);
    expect(media.map((m) => m.mediaType)).toEqual([JSON_MEDIA]);
    const schema = deref(media[0]!.media.schema, child(media[0]!.pointer, 'schema')).node;
    expect(typesOf(schema)).toEqual(['object']);
    expect(schema.properties).not.toHaveProperty(['data']);
    // The service always announces its event stream, so its bulk answer requires eventStreams (optional in OFREP).
    expect(schema.required).toEqual(operation.op['x-ofrep'] === 'flags' ? ['flags', 'eventStreams'] : ['key', 'reason']);
    for (const status of ofrepErrorStatuses(operation)) {
      const error = mediaOf(statusOf(operation, status)!);
      expect(error.map((m) => m.mediaType), status).toEqual([JSON_MEDIA]);
      expect(deref(error[0]!.media.schema, child(error[0]!.pointer, 'schema')).node.required, status).toContain('errorCode');
    }
    expect(operation.responses.map((r) => r.status).filter((s) => /^2/.test(s))).toEqual(['200']);
  });

  it.each(operationRows.filter(([key, o]) => !STREAMS.includes(key) && !isOfrep(o)))('%s: has a 200 whose JSON body is an object with `data` required, and no other 2xx', (_key, operation) => {
    const ok = statusOf(operation, '200');
    expect(ok).toBeDefined();
    const media = mediaOf(ok!);
    expect(media.map((m) => m.mediaType)).toContain(JSON_MEDIA);
    for (const m of media) {
      expect(m.mediaType, m.pointer).toMatch(/^application\/(.+\+)?json$/);
      const schema = deref(m.media.schema, child(m.pointer, 'schema')).node;
      expect(typesOf(schema)).toEqual(['object']);
      expect(schema.required).toContain('data');
      expect(isNode(schema.properties) && 'data' in schema.properties).toBe(true);
    }
    expect(operation.responses.map((r) => r.status).filter((s) => /^2/.test(s))).toEqual(['200']);
  });

  const publishedStatuses = published.errors.flatMap(({ status, operations: keys }) =>
    keys.map((key) => [status, key] as [string, OperationKey]),
  );
  it('the interface lists 7 statuses on operations in its Errors table', () => {
    expect(publishedStatuses).toHaveLength(7);
  });
  it.each(publishedStatuses)('when the interface lists %s on %s, then the operation documents it', (status, key) => {
    expect(operationByKey.get(key)?.responses.map((r) => r.status)).toContain(status);
  });

  const rule = (status: string, except: OperationKey[], expected: number) => {
    const rows = operationRows.filter(([key]) => !except.includes(key));
    it(`${expected} operations are checked for ${status}`, () => expect(rows).toHaveLength(expected));
    it.each(rows)(`%s: documents ${status}`, (_key, operation) => {
      expect(operation.responses.map((r) => r.status)).toContain(status);
    });
  };
  rule('400', [], ALL);
  rule('401', [HEALTH], ALL - 1);
  rule('403', [HEALTH, INGEST, INGEST_BATCH, EVALUATE], ALL - 4);

  const withBody = operationRows.filter(([, o]) => o.requestBody);
  it.each(withBody)('%s: has a request body, so documents 413 and 415', (_key, operation) => {
    const statuses = operation.responses.map((r) => r.status);
    expect(statuses).toContain('413');
    expect(statuses).toContain('415');
  });

  const errorResponses = operations.flatMap((o) =>
    o.responses.filter((r) => (/^[45]/.test(r.status) || r.status === 'default') && !ofrepErrorStatuses(o).includes(r.status)).map((r) => [`${o.key} ${r.status}`, r] as const),
  );
  it('every operation has error responses to check', () => {
    expect(new Set(errorResponses.map(([name]) => name.replace(/ \S+$/, ''))).size).toBe(ALL);
  });
  it.each(errorResponses)('%s: is application/problem+json with the Problem schema', (_name, response) => {
    const media = mediaOf(response);
    expect(media.map((m) => m.mediaType)).toEqual([PROBLEM_MEDIA]);
    expect(deref(media[0]!.media.schema, child(media[0]!.pointer, 'schema')).pointer).toBe(PROBLEM);
  });

  // The headers every answer carries (server/rate-limit/rate-limiter.ts, server/contract/cors.ts), declared once in
  // components.headers and referenced by every response, so that clients and docs see them.
  const EVERY_ANSWER = {
    'RateLimit-Limit': '#/components/headers/RateLimitLimit',
    'RateLimit-Remaining': '#/components/headers/RateLimitRemaining',
    'RateLimit-Reset': '#/components/headers/RateLimitReset',
    'Access-Control-Allow-Origin': '#/components/headers/Access-Control-Allow-Origin',
  };
  const allResponses = operations.flatMap((o) => o.responses.map((r) => [`${o.key} ${r.status}`, r] as const));
  it.each(allResponses)('%s: references the rate-limit and CORS headers of every answer', (_name, response) => {
    const headers = Object.fromEntries(Object.entries((response.node.headers ?? {}) as Node).map(([name, header]) => [name, header.$ref]));
    expect(headers).toMatchObject(EVERY_ANSWER);
  });
  it.each(['429', '503'])('every %s also declares Retry-After', (status) => {
    const responses = allResponses.filter(([name]) => name.endsWith(` ${status}`));
    expect(responses.length).toBeGreaterThan(0);
    for (const [name, response] of responses) expect(response.node.headers?.['Retry-After']?.$ref, name).toBe('#/components/headers/RetryAfter');
  });

  it('the Problem schema is an object requiring type, title, status and detail', () => {
    const problem = at(PROBLEM) as Node;
    expect(typesOf(problem)).toEqual(['object']);
    for (const name of ['type', 'title', 'status', 'detail']) {
      expect(problem.required).toContain(name);
      expect(problem.properties).toHaveProperty([name]);
    }
  });

  it.each(operationRows)('%s: has a snake_case operationId, a summary, a description and a tag', (_key, operation) => {
    const { operationId, summary, description, tags } = operation.op;
    expect(operationId).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
    expect(typeof summary === 'string' && summary.trim().length > 0).toBe(true);
    expect(typeof description === 'string' && description.trim().length > 0).toBe(true);
    expect(Array.isArray(tags) && tags.length > 0 && tags.every((t) => typeof t === 'string' && t.length > 0)).toBe(true);
  });

  it('operationIds are unique', () => {
    const ids = operations.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ALL);
  });
});

// =============================================================================================
// 5. Request bodies
// =============================================================================================

describe('5. request bodies', () => {
  // The create, update, ingest and evaluate operations take a body (the interface's 11, the batch, evaluate); no other one does.
  const expectedWithBody = [...published.endpoints, ...ADDITIONS].filter((e) => /^(Create|Update|Ingest|Evaluate)\b/.test(e.purpose)).map((e) => e.key);
  const withBody = operationRows.filter(([, o]) => o.requestBody);

  it('exactly the 18 create, update, ingest and evaluate operations take a body', () => {
    expect(expectedWithBody).toHaveLength(18);
    expect(withBody.map(([key]) => key).sort()).toEqual([...expectedWithBody].sort());
  });

  it.each(withBody)('%s: offers application/json and application/vnd.api+json with the same schema', (_key, operation) => {
    const media = mediaOf(operation.requestBody!);
    const json = media.find((m) => m.mediaType === JSON_MEDIA);
    const vnd = media.find((m) => m.mediaType === VND_MEDIA);
    expect(json?.media.schema).toBeDefined();
    expect(vnd?.media.schema).toEqual(json!.media.schema);
  });

  it.each(withBody)('%s: every object schema of its body is closed with unevaluatedProperties: false (attributes aside)', (_key, operation) => {
    const visits = walk(mediaOf(operation.requestBody!).flatMap(schemaRoot));
    const objects = visits.filter((v): v is SchemaVisit & { schema: Node } => isNode(v.schema) && isObjectSchema(v.schema));
    expect(objects.length).toBeGreaterThan(0);
    const open = objects.filter((v) => !isAttributes(v) && !isConditionObject(v) && !isKeyedMap(v) && v.schema.unevaluatedProperties !== false);
    expect(open.map((v) => v.pointer)).toEqual([]);
    for (const attributes of objects.filter(isAttributes)) {
      const values = attributes.schema.additionalProperties;
      expect(isNode(values), attributes.pointer).toBe(true);
      expect(attributeValueShapes(values)).toEqual(ATTRIBUTE_VALUE_SHAPES);
    }
  });

  it('the walk of a body reaches oneOf branches and nested $ref objects (ingest: IngestParticipant, Attributes)', () => {
    const visits = walk(mediaOf(operationByKey.get(INGEST)!.requestBody!).flatMap(schemaRoot));
    const pointers = visits.map((v) => v.pointer);
    expect(pointers).toContain('#/components/schemas/IngestParticipant');
    expect(visits.some((v) => v.pointer === '#/components/schemas/Attributes' && isAttributes(v))).toBe(true);
  });

  it('the only open object of any request body is a participant `attributes`', () => {
    const visits = walk(requestSchemaRoots);
    const open = visits.filter(
      (v) => isNode(v.schema) && isObjectSchema(v.schema) && v.schema.unevaluatedProperties !== false,
    );
    expect(open.length).toBeGreaterThan(0);
    expect(open.every((v) => isAttributes(v) || isConditionObject(v) || isKeyedMap(v))).toBe(true);
  });

  it.each(published.requestBodies.map((b) => [b.operation, b]))('%s: its body has the properties the interface names and not the removed ones', (key, body) => {
    const operation = operationByKey.get(key)!;
    expect(operation.requestBody).toBeDefined();
    for (const m of mediaOf(operation.requestBody!)) {
      const schema = deref(m.media.schema, child(m.pointer, 'schema')).node;
      const names = walk([{ schema, pointer: m.pointer }]).flatMap((v) =>
        isNode(v.schema) && isNode(v.schema.properties) ? Object.keys(v.schema.properties) : [],
      );
      for (const name of body.present) expect(schema.properties, `${m.mediaType} ${name}`).toHaveProperty([name]);
      for (const name of body.absent) expect(names, `${m.mediaType} ${name}`).not.toContain(name);
    }
  });

  it.each([JSON_MEDIA, VND_MEDIA])(
    'when POST /api/teams/{team}/experiments is sent algorithm_type as %s, then the body schema rejects it',
    (mediaType) => {
      const create = operationByKey.get('POST /api/teams/{team}/experiments')!;
      const validate = validatorAt(child(jsonSchemaOf(create, mediaType).pointer, 'schema'));
      expect(validate({ key: 'a', event: 'b' }), JSON.stringify(validate.errors)).toBe(true);
      expect(validate({ key: 'a', event: 'b', algorithm_type: 'x' })).toBe(false);
    },
  );
});

// =============================================================================================
// 6. Typed, closed and bounded schemas
// =============================================================================================

describe('6. typed, closed and bounded schemas', () => {
  it('the walk covers every component schema and the schemas of parameters, bodies and responses', () => {
    expect(parameterSchemaRoots.length).toBeGreaterThanOrEqual(allParameters.length);
    expect(requestSchemaRoots).toHaveLength(34); // 17 bodies (the two OFREP operations share one) × 2 media types
    // every response media type has a schema; the responses are shared components, so fewer than 38
    expect(responseSchemaRoots.length).toBe(responseMedia.length + responseHeaders.length);
    // A 304 (config) has no body.
    const withBody = Object.values(doc.components.responses as Record<string, Node>).filter((response) => response.content);
    expect(responseMedia.length).toBeGreaterThanOrEqual(withBody.length);
    expect(schemaNodes.length).toBeGreaterThan(componentSchemaRoots.length);
  });

  it('when any schema node is reached, then it has type, $ref, enum/const or a combinator, and is not {}', () => {
    const untyped = allSchemas.filter(
      ({ schema }) =>
        schema === true ||
        (isNode(schema) &&
          !['type', '$ref', 'enum', 'const', 'oneOf', 'anyOf', 'allOf'].some((keyword) => keyword in schema)),
    );
    expect(untyped.map((v) => `${v.pointer} ${JSON.stringify(v.schema)}`)).toEqual([]);
  });

  it('when the types are generated, then no schema becomes an object that can hold nothing (an audit entry\'s object-valued field included)', () => {
    const types = readFileSync(new URL('../../generated/api.d.ts', import.meta.url), 'utf8');
    const schemas = types.slice(types.indexOf('export interface components'), types.indexOf('export type $defs'));
    expect(schemas.length).toBeGreaterThan(10_000);
    expect(schemas.split('\n').filter((line) => line.includes('Record<string, never>'))).toEqual([]);
  });

  it('when an object schema is reached from a response, then it is closed (attributes aside)', () => {
    const visits = walk(responseSchemaRoots);
    const objects = visits.filter((v): v is SchemaVisit & { schema: Node } => isNode(v.schema) && isObjectSchema(v.schema));
    expect(objects.length).toBeGreaterThan(30);
    const open = objects.filter(
      (v) =>
        !isAttributes(v) &&
        !isConditionObject(v) &&
        !isKeyedMap(v) &&
        !OFREP_OPEN_VALUES.includes(v.pointer) &&
        !isAuditFieldValue(v) &&
        v.schema.additionalProperties !== false &&
        v.schema.unevaluatedProperties !== false,
    );
    expect(open.map((v) => v.pointer)).toEqual([]);
    for (const attributes of objects.filter(isAttributes))
      expect(attributeValueShapes(attributes.schema.additionalProperties)).toEqual(ATTRIBUTE_VALUE_SHAPES);
  });

  it('the walk of a response reaches nested objects (GET /api/teams: Team, Variant, Attributes)', () => {
    const teams = operationByKey.get('GET /api/teams')!;
    const visits = walk(mediaOf(teams.responses.find((r) => r.status === '200')!).flatMap(schemaRoot));
    for (const name of ['Team', 'Experiment', 'Variant', 'Participant', 'PaginationMeta'])
      expect(visits.map((v) => v.pointer)).toContain(`#/components/schemas/${name}`);
    expect(visits.some((v) => v.pointer === '#/components/schemas/Attributes' && isAttributes(v))).toBe(true);
  });

  it('when a schema admits strings, then it has maxLength (or enum, const or format date-time)', () => {
    const strings = schemaNodes.filter((v) => typesOf(v.schema).includes('string'));
    expect(strings.length).toBeGreaterThan(20);
    const unbounded = strings.filter(
      ({ schema }) =>
        typeof schema.maxLength !== 'number' && !('enum' in schema) && !('const' in schema) && schema.format !== 'date-time',
    );
    expect(unbounded.map((v) => v.pointer)).toEqual([]);
  });

  it('when a schema admits arrays, then it has maxItems', () => {
    const arrays = schemaNodes.filter((v) => typesOf(v.schema).includes('array'));
    expect(arrays.length).toBeGreaterThan(10);
    expect(arrays.filter((v) => typeof v.schema.maxItems !== 'number').map((v) => v.pointer)).toEqual([]);
  });

  it('when a schema admits integers, then it has a format', () => {
    const integers = schemaNodes.filter((v) => typesOf(v.schema).includes('integer'));
    expect(integers.length).toBeGreaterThan(10);
    expect(integers.filter((v) => typeof v.schema.format !== 'string').map((v) => v.pointer)).toEqual([]);
  });

  it('when an integer is request input (parameter or body), then it has minimum and maximum', () => {
    const integers = requestInputSchemas.filter(
      (v): v is SchemaVisit & { schema: Node } => isNode(v.schema) && typesOf(v.schema).includes('integer'),
    );
    // team, page, per_page and a variant's traffic at least
    expect(integers.length).toBeGreaterThanOrEqual(4);
    const unbounded = integers.filter(
      ({ schema }) => typeof schema.minimum !== 'number' || typeof schema.maximum !== 'number',
    );
    expect(unbounded.map((v) => v.pointer)).toEqual([]);
  });
});

// =============================================================================================
// 7. Examples
// =============================================================================================

describe('7. examples validate against their schemas', () => {
  interface ExampleCase {
    where: Pointer;
    schema: Pointer;
    value: unknown;
  }
  const examplesOf = (container: Node, pointer: Pointer, schema: Pointer): ExampleCase[] => {
    const cases: ExampleCase[] = [];
    if ('example' in container) cases.push({ where: child(pointer, 'example'), schema, value: container.example });
    if (isNode(container.examples))
      for (const [name, example] of Object.entries(container.examples as Node)) {
        const resolved = deref(example, child(pointer, 'examples', name));
        if ('value' in resolved.node) cases.push({ where: resolved.pointer, schema, value: resolved.node.value });
      }
    return cases;
  };

  const mediaCases = uniqueByPointer([...requestMedia, ...responseMedia]).flatMap((m) =>
    examplesOf(m.media, m.pointer, child(m.pointer, 'schema')),
  );
  const parameterCases = allParameters.flatMap((p) => [
    ...examplesOf(p.node, p.pointer, child(p.pointer, 'schema')),
    ...mediaOf(p).flatMap((m) => examplesOf(m.media, m.pointer, child(m.pointer, 'schema'))),
  ]);
  const schemaCases = schemaNodes.flatMap(({ schema, pointer }) => [
    ...(Array.isArray(schema.examples)
      ? schema.examples.map((value: unknown, i: number) => ({ where: child(pointer, 'examples', i), schema: pointer, value }))
      : []),
    ...('example' in schema ? [{ where: child(pointer, 'example'), schema: pointer, value: schema.example }] : []),
  ]);

  it('there are media-type, parameter and schema examples to check', () => {
    expect(mediaCases.length).toBeGreaterThan(0);
    expect(parameterCases.length).toBeGreaterThan(0);
    expect(schemaCases.length).toBeGreaterThan(0);
  });

  it.each([...mediaCases, ...parameterCases, ...schemaCases].map((c) => [c.where, c]))('%s validates', (_where, c) => {
    const validate = validatorAt(c.schema);
    expect(validate(c.value), JSON.stringify(validate.errors)).toBe(true);
  });
});

describe('7b. every documented error has an example of its own status', () => {
  const errorResponses = operations.flatMap((op) =>
    op.responses.filter((r) => Number(r.status) >= 400).map((r) => [`${op.key} ${r.status}`, r.status, r, ofrepErrorStatuses(op).includes(r.status)] as const),
  );

  it.each(errorResponses)('%s', (_label, status, response, ofrep) => {
    const examples = mediaOf(response).flatMap(({ media }) => [
      ...('example' in media ? [media.example] : []),
      ...Object.values((media.examples ?? {}) as Node).map((example) => deref(example, '#').node.value),
    ]);
    expect(examples.length).toBeGreaterThan(0);
    // OFREP's error bodies carry no status: their example names an OFREP error code instead.
    for (const example of examples) expect(ofrep ? typeof example.errorCode : example.status).toBe(ofrep ? 'string' : Number(status));
  });
});

// =============================================================================================
// 8. The 405 rule
// =============================================================================================

describe('8. the 405 rule', () => {
  it('info.description says that a method a path does not have is answered 405 with an Allow header', () => {
    const description: unknown = doc.info?.description;
    expect(typeof description).toBe('string');
    expect(description).toMatch(/\b405\b/);
    expect(description).toMatch(/\bAllow\b/);
  });
});
