// The bundled contract (generated/openapi.json) as the fuzzer reads it: its operations with
// their parameters, request body and documented responses, and Ajv validators for any schema
// of it (Ajv 2020 + ajv-formats, $refs resolved inside the document, as test/contract does).
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/** A JSON object of the document (a schema, an operation, a response, …). */
export type Node = { [key: string]: any };
/** A JSON pointer into the document, as a `$ref` writes it: `#/components/schemas/Key`. */
export type Pointer = string;

export const doc: Node = JSON.parse(readFileSync(new URL('../../generated/openapi.json', import.meta.url), 'utf8'));

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
export const JSON_MEDIA = 'application/json';
export const VND_MEDIA = 'application/vnd.api+json';

export const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);

export function child(pointer: Pointer, ...segments: (string | number)[]): Pointer {
  return pointer + segments.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

function at(pointer: Pointer): Node {
  let node: unknown = doc;
  for (const raw of pointer.slice(1).split('/').slice(1)) {
    node = (node as Node)[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`unresolvable pointer ${pointer}`);
  }
  return node as Node;
}

/** Follows internal `$ref`s to the node they name, keeping the pointer of where it is. */
export function deref(node: Node, pointer: Pointer): { node: Node; pointer: Pointer } {
  while (typeof node.$ref === 'string') {
    pointer = node.$ref;
    node = at(pointer);
  }
  return { node, pointer };
}

/** A schema with its `$ref`s followed (the top level only). */
export function resolve(schema: Node): Node {
  return deref(schema, '#').node;
}

// ---------------------------------------------------------------------------------------------
// Ajv over the whole document
// ---------------------------------------------------------------------------------------------

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'doc');
const compiled = new Map<Pointer, ValidateFunction>();

/** A validator for the schema at `pointer` of the document. */
export function validatorAt(pointer: Pointer): ValidateFunction {
  let validate = compiled.get(pointer);
  if (!validate) {
    const fragment = pointer.slice(1).split('/').map(encodeURIComponent).join('/');
    validate = ajv.compile({ $ref: `doc#${fragment}` });
    compiled.set(pointer, validate);
  }
  return validate;
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  /** The parameter's schema, `$ref` followed. */
  schema: Node;
  schemaPointer: Pointer;
  example: unknown;
  explode: boolean;
}

export interface RequestBody {
  required: boolean;
  mediaTypes: string[];
  /** The application/json schema, `$ref` followed, and where it is. */
  schema: Node;
  schemaPointer: Pointer;
  example: unknown;
}

export interface Operation {
  /** Position in the document: varies which of the longer lists of values an operation gets. */
  index: number;
  operationId: string;
  method: string;
  template: string;
  label: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  body?: RequestBody;
  /** status → media type → pointer of the response schema. */
  responses: Map<number, Map<string, Pointer>>;
  isPublic: boolean;
  acceptsIngestKey: boolean;
  /** GET: cannot change anything, whatever it is sent. */
  isSafe: boolean;
  /** An OFREP operation (`x-ofrep`): its 400, 404 and 500 bodies are OFREP's, with no `status`. */
  ofrep: boolean;
}

function toParameter(raw: Node, base: Pointer): Parameter {
  const { node, pointer } = deref(raw, base);
  return {
    name: node.name,
    in: node.in,
    required: node.required === true,
    schema: resolve(node.schema),
    schemaPointer: child(pointer, 'schema'),
    example: node.example,
    explode: node.explode ?? node.style === undefined,
  };
}

export const operations: Operation[] = Object.entries(doc.paths as Node).flatMap(([template, item]) =>
  METHODS.filter((method) => isNode(item[method])).map((method): Omit<Operation, 'index'> => {
    const op: Node = item[method];
    const opPointer = child('#/paths', template, method);
    const byName = new Map<string, Parameter>();
    for (const [i, p] of ((item.parameters ?? []) as Node[]).entries()) {
      const parameter = toParameter(p, child('#/paths', template, 'parameters', i));
      byName.set(`${parameter.in}:${parameter.name}`, parameter);
    }
    for (const [i, p] of ((op.parameters ?? []) as Node[]).entries()) {
      const parameter = toParameter(p, child(opPointer, 'parameters', i));
      byName.set(`${parameter.in}:${parameter.name}`, parameter);
    }
    const parameters = [...byName.values()];
    let body: RequestBody | undefined;
    if (isNode(op.requestBody)) {
      const { node, pointer } = deref(op.requestBody, child(opPointer, 'requestBody'));
      const json = node.content[JSON_MEDIA];
      body = {
        required: node.required === true,
        mediaTypes: Object.keys(node.content),
        schema: resolve(json.schema),
        schemaPointer: child(pointer, 'content', JSON_MEDIA, 'schema'),
        example: json.example,
      };
    }
    const responses = new Map<number, Map<string, Pointer>>();
    for (const [status, raw] of Object.entries(op.responses as Node)) {
      const { node, pointer } = deref(raw, child(opPointer, 'responses', status));
      const media = new Map<string, Pointer>();
      for (const mediaType of Object.keys(node.content ?? {})) media.set(mediaType, child(pointer, 'content', mediaType, 'schema'));
      responses.set(Number(status), media);
    }
    const security: Node[] = op.security ?? doc.security ?? [];
    return {
      operationId: op.operationId,
      method: method.toUpperCase(),
      template,
      label: `${method.toUpperCase()} ${template}`,
      pathParams: parameters.filter((p) => p.in === 'path'),
      queryParams: parameters.filter((p) => p.in === 'query'),
      body,
      responses,
      isPublic: security.some((requirement) => Object.keys(requirement).length === 0),
      acceptsIngestKey: security.some((requirement) => 'ingestKey' in requirement),
      isSafe: method === 'get',
      ofrep: op['x-ofrep'] !== undefined,
    };
  }),
).map((op, index) => ({ ...op, index }));

// ---------------------------------------------------------------------------------------------
// Schemas: types, valid samples, and whether a value breaks them
// ---------------------------------------------------------------------------------------------

export type JsonType = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

/** The JSON types a schema admits (through `$ref`, `enum` and `oneOf`/`anyOf`). */
export function typesOf(schema: Node): Set<JsonType> {
  const s = resolve(schema);
  const types = new Set<JsonType>();
  if (Array.isArray(s.type)) s.type.forEach((t: JsonType) => types.add(t));
  else if (typeof s.type === 'string') types.add(s.type as JsonType);
  for (const branch of [...(s.oneOf ?? []), ...(s.anyOf ?? [])] as Node[]) typesOf(branch).forEach((t) => types.add(t));
  if (Array.isArray(s.enum) && types.size === 0) for (const v of s.enum) types.add(typeof v === 'string' ? 'string' : (typeof v as JsonType));
  if (types.has('number')) types.add('integer');
  return types;
}

/** The object branch of a schema (itself, or a `oneOf`/`anyOf` branch) that has properties. */
export function objectBranch(schema: Node): Node | undefined {
  const s = resolve(schema);
  if (isNode(s.properties) || isNode(s.additionalProperties)) return s;
  for (const branch of [...(s.oneOf ?? []), ...(s.anyOf ?? [])] as Node[]) {
    const found = objectBranch(branch);
    if (found) return found;
  }
  return undefined;
}

/**
 * A valid value of the schema with every property present: from examples, enums and bounds. A
 * recursive schema (Condition) met again inside itself is sampled from its example instead.
 */
export function fullSample(schema: Node, inside: Set<Node> = new Set()): unknown {
  const s = resolve(schema);
  const object = objectBranch(s);
  if (object && isNode(object.properties) && !inside.has(object)) {
    inside.add(object);
    const sample = Object.fromEntries(Object.entries(object.properties as Node).map(([name, property]) => [name, fullSample(property, inside)]));
    inside.delete(object);
    return sample;
  }
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('example' in s) return s.example;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if ('default' in s) return s.default;
  for (const branch of [...(s.oneOf ?? []), ...(s.anyOf ?? [])] as Node[]) return fullSample(branch, inside);
  const types = typesOf(s);
  if (types.has('string')) return 'a';
  if (types.has('integer')) return typeof s.minimum === 'number' ? s.minimum : 1;
  if (types.has('boolean')) return true;
  if (types.has('array')) return Array.from({ length: typeof s.minItems === 'number' ? s.minItems : 0 }, () => fullSample(s.items ?? {}, inside));
  if (types.has('object')) return {};
  return null;
}
