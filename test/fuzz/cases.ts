// What the fuzzer sends: for one operation, a request that is valid but for one broken part
// (a path segment, a query value, the credential, the body or one of its properties), and
// what the contract says of it. Fixed cases enumerate the issue's list; `randomCase` samples
// the same kinds of breakage with fast-check.
import { parse as parseQuery } from 'node:querystring';
import fc from 'fast-check';
import {
  JSON_MEDIA,
  VND_MEDIA,
  fullSample,
  isNode,
  objectBranch,
  resolve,
  typesOf,
  validatorAt,
  type Node,
  type Operation,
  type Parameter,
} from './spec';

/** One HTTP request, as it goes on the wire. */
export interface WireRequest {
  method: string;
  /** Per path parameter, the segment as sent: already percent-encoded (or deliberately not). */
  path: Record<string, string>;
  /** The query string without `?`; '' for none. */
  query: string;
  authorization?: string;
  contentType?: string;
  body?: string | Buffer;
}

export interface Case {
  /** What is broken, for failure messages. */
  label: string;
  request: WireRequest;
  /** The request breaks its operation's contract, or names what does not exist: never a 2xx. */
  mustFail: boolean;
  /** The status the contract's rules name for it, where they name one. */
  status?: number;
  /** Path parameters (valid ones) that name what does not exist in the team. */
  absent: string[];
}

/** What the cases are built against: the arranged team and the keys that exist in it. */
export interface Fixture {
  teamId: number;
  token: string;
  /** Path parameter name → the value that exists (the operation's path example, or the team id). */
  present: Record<string, string>;
  /** Path parameter name → every value of it that exists in the team. */
  existing: Record<string, Set<string>>;
}

type Verdict = 'breaks' | 'valid';

// ---------------------------------------------------------------------------------------------
// Verdicts: does a part of a request break its schema?
// ---------------------------------------------------------------------------------------------

/** Percent-decoding as Express does it for a path segment; undefined when it cannot. */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * A parameter value (a string off the wire) against its schema. Integers: the validator
 * coerces numeric strings ("01", "1e0", " 1") before checking, so only what is not a finite
 * number, not an integer or out of bounds breaks.
 */
function paramVerdict(param: Parameter, value: string | string[]): Verdict {
  const types = typesOf(param.schema);
  const validate = validatorAt(param.schemaPointer);
  if (Array.isArray(value)) {
    if (!types.has('array')) return 'breaks';
    return 'valid'; // a repeated array parameter: either reading is defensible; no claim
  }
  if (types.has('array')) return validate(value === '' ? [] : value.split(',')) ? 'valid' : 'breaks'; // an empty list parameter is the empty list
  if (types.has('integer')) {
    if (value.trim() === '') return 'breaks';
    const number = Number(value);
    if (!Number.isFinite(number)) return 'breaks';
    return validate(number) ? 'valid' : 'breaks';
  }
  return validate(value) ? 'valid' : 'breaks';
}

/** Whether a path parameter's (decoded) value names something that exists in the team. */
function exists(param: Parameter, decoded: string, fixture: Fixture): boolean {
  if (typesOf(param.schema).has('integer')) {
    return decoded.trim() !== '' && Number(decoded) === fixture.teamId;
  }
  return fixture.existing[param.name]?.has(decoded) ?? false;
}

/**
 * A query against the operation's parameters. Integer parameters are decimal digits only, and a
 * page may reach at most 10 000 items deep (`page × per_page`, per_page 15 by default).
 */
function queryVerdict(op: Operation, query: string): Verdict {
  const parsed = parseQuery(query);
  for (const [name, value] of Object.entries(parsed)) {
    const param = op.queryParams.find((p) => p.name === name);
    if (!param) return 'breaks';
    if (value === undefined || paramVerdict(param, value) === 'breaks') return 'breaks';
    if (typesOf(param.schema).has('integer') && !/^[0-9]+$/.test(String(value))) return 'breaks';
  }
  const whole = (value: unknown, fallback: number) => (typeof value === 'string' ? Number(value) : fallback);
  if (whole(parsed.page, 1) * whole(parsed.per_page, 15) > 10_000) return 'breaks';
  return 'valid';
}

/** How body-parser reads a JSON body (strict: an object or an array), then the body schema. */
function bodyVerdict(op: Operation, body: string | Buffer | undefined, contentType: string | undefined): Verdict | 'ignored' {
  const media = contentType?.split(';')[0]!.trim().toLowerCase();
  const charset = /charset=([^;]+)/i.exec(contentType ?? '')?.[1]?.trim().toLowerCase();
  const text = body === undefined ? '' : body.toString();
  const isJson = media === JSON_MEDIA || media === VND_MEDIA;
  if (!op.body) {
    if (body === undefined || text === '' || !isJson) return 'valid'; // an empty body is no body
    const parsed = parseJson(text);
    return parsed.ok ? 'ignored' : 'breaks';
  }
  if (body === undefined || text === '') return 'breaks'; // the body is required
  if (!media || !op.body.mediaTypes.includes(media)) return 'breaks';
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return 'breaks'; // the bytes are UTF-8
  if (Buffer.isBuffer(body) && !Buffer.from(body.toString('utf8'), 'utf8').equals(body)) return 'breaks';
  const parsed = parseJson(text);
  if (!parsed.ok) return 'breaks';
  return validatorAt(op.body.schemaPointer)(parsed.value) ? 'valid' : 'breaks';
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (!/^[\x20\x09\x0a\x0d]*[[{]/.test(text)) return { ok: false }; // body-parser's strict mode
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

// ---------------------------------------------------------------------------------------------
// Building cases
// ---------------------------------------------------------------------------------------------

const RAW = '__fuzz_raw_literal__';

/** A JSON text with `raw` where the placeholder was: literals JSON.stringify cannot write. */
function stringify(value: unknown, raw?: string): string {
  const text = JSON.stringify(value);
  return raw === undefined ? text : text.replace(JSON.stringify(RAW), raw);
}

function baseRequest(op: Operation, fixture: Fixture, variant = 0): WireRequest {
  const path = Object.fromEntries(op.pathParams.map((p) => [p.name, encodeURIComponent(fixture.present[p.name]!)]));
  return {
    method: op.method,
    path,
    query: '',
    authorization: `Bearer ${fixture.token}`,
    ...(op.body && {
      // Both media types the contract offers take the same schema: alternate them.
      contentType: mediaFor(op, variant),
      body: stringify(op.body.example),
    }),
  };
}

/** Points the operation's last path parameter at a key that does not exist (a valid one). */
function elsewhere(op: Operation, request: WireRequest): WireRequest {
  const last = op.pathParams.at(-1);
  if (!last) return request;
  const missing = typesOf(last.schema).has('integer') ? '9007199254740991' : 'no_such_key';
  return { ...request, path: { ...request.path, [last.name]: missing } };
}

/**
 * What the contract says of a request: it must fail when a part of it breaks its schema, it has
 * no valid credential, or it names what does not exist (which also keeps it from writing).
 */
function judge(op: Operation, fixture: Fixture, label: string, request: WireRequest, status?: number): Case {
  let breaks = false;
  const absent: string[] = [];
  for (const param of op.pathParams) {
    const decoded = decodeSegment(request.path[param.name]!);
    if (decoded === undefined || paramVerdict(param, decoded) === 'breaks') breaks = true;
    else if (!exists(param, decoded, fixture)) absent.push(param.name);
  }
  if (queryVerdict(op, request.query) === 'breaks') breaks = true;
  const body = bodyVerdict(op, request.body, request.contentType);
  if (body === 'breaks') breaks = true;
  const authorized = request.authorization === `Bearer ${fixture.token}`;
  const publicCall = op.isPublic && request.authorization === undefined;
  const mustFail = breaks || absent.length > 0 || !(authorized || publicCall);
  // fast-check prints a counterexample with this: the label, not the whole (possibly huge) request.
  return { label, request, mustFail, status, absent, [fc.toStringMethod]: () => `${mustFail ? 'must fail' : 'may pass'}: ${label}` } as Case;
}

// ----- choosing from the longer lists

/** FUZZ_FIXED=all sends every value of every list to every operation (slower; for a local hunt). */
const ALL = process.env.FUZZ_FIXED === 'all';

/**
 * The first `always` items (what the issue names), and `extra` more of the rest, taken in turn by
 * `salt` so that across the operations every item is sent somewhere: bounded, yet covering.
 */
function choose<T>(list: readonly T[], always: number, extra: number, salt: number): T[] {
  if (ALL) return [...list];
  const rest = list.slice(always);
  const picked = list.slice(0, always);
  for (let i = 0; i < Math.min(extra, rest.length); i++) picked.push(rest[(salt * extra + i) % rest.length]!);
  return picked;
}

// ----- credentials

function credentialCases(op: Operation, fixture: Fixture): Case[] {
  const token = fixture.token;
  const headers: Array<[string, string | undefined]> = [
    ['no credential', undefined],
    ['an empty Bearer', 'Bearer'],
    ['Bearer and a space', 'Bearer '],
    ['Basic credentials', 'Basic dXNlcjpwYXNzd29yZA=='],
    ['another scheme with the token', `Token ${token}`],
    ['a 300-character token', `Bearer ${'x'.repeat(300)}`],
    ['the token with a character added', `Bearer ${token}x`],
    ['the token with its last character cut', `Bearer ${token.slice(0, -1)}`],
    ['the token twice', `Bearer ${token} ${token}`],
    ['the token upper-cased', `Bearer ${token.toUpperCase()}`],
    ['the token quoted', `Bearer "${token}"`],
    ['only the prefix of a token', 'Bearer est_'],
    ['only the prefix of an ingest key', 'Bearer esk_'],
  ];
  return choose(headers, 1, 1, op.index).map(([label, authorization]) => {
    const request = { ...baseRequest(op, fixture), authorization };
    const status = authorization === undefined && op.isPublic ? 200 : 401;
    return judge(op, fixture, `credential: ${label}`, request, status);
  });
}

// ----- path segments

/** What the issue names for every path parameter: 300-character keys, spaces, emoji, quotes, %00. */
const ISSUE_SEGMENTS: Array<[string, string]> = [
  ['300 characters', 'a'.repeat(300)],
  ['a space inside', encodeURIComponent('a b')],
  ['an emoji', encodeURIComponent('🧪')],
  ['quotes', encodeURIComponent(`a'b"c`)],
  ['%00', '%00'],
];

const MORE_SEGMENTS: Array<[string, string]> = [
  ['256 characters', 'k'.repeat(256)],
  ['only a space', '%20'],
  ['an SQL injection', encodeURIComponent("x' OR '1'='1")],
  ['%00 inside', 'a%00b'],
  ['a tab', '%09'],
  ['a newline', 'a%0Ab'],
  ['DEL', '%7F'],
  ['an encoded slash', 'a%2Fb'],
  ['a backslash', encodeURIComponent('a\\b')],
  ['a broken percent-encoding', '%zz'],
  ['a lone percent', 'a%'],
  ['invalid UTF-8', '%FF%FE'],
  ['an overlong UTF-8 NUL', '%C0%80'],
  ['a lone surrogate (CESU-8)', '%ED%A0%80'],
  ['__proto__', '__proto__'],
  ['constructor', 'constructor'],
  ['toString', 'toString'],
  ['a key that does not exist', 'no_such_key'],
  ['a right-to-left override', encodeURIComponent('a\u202eb')],
  ['unicode letters', encodeURIComponent('Zürich東京')],
];

const TEAM_SEGMENTS: Array<[string, string]> = [
  ['a word', 'abc'],
  ['zero', '0'],
  ['negative', '-1'],
  ['huge', '999999999999999999999'],
  ['2^53 (one past the maximum)', '9007199254740992'],
  ['the maximum (no such team)', '9007199254740991'],
  ['2^31 (no such team)', '2147483648'],
  ['a fraction', '1.5'],
  ['1e308', '1e308'],
  ['Infinity', 'Infinity'],
  ['NaN', 'NaN'],
  ['null', 'null'],
  ['true', 'true'],
  ['a JSON array', encodeURIComponent('[1]')],
  ['hexadecimal garbage', '0xZZ'],
  ['300 digits', '9'.repeat(300)],
];

function segmentsFor(param: Parameter, fixture: Fixture, salt: number): Array<[string, string]> {
  const present = fixture.present[param.name]!;
  const own: Array<[string, string]> = typesOf(param.schema).has('integer')
    ? TEAM_SEGMENTS
    : [
        ['the existing key upper-cased', encodeURIComponent(present.toUpperCase())],
        ['the existing key and a trailing space', encodeURIComponent(`${present} `)],
        ['the existing key and %00', `${encodeURIComponent(present)}%00`],
        ['the existing key and an emoji', encodeURIComponent(`${present}🧪`)],
        ['the existing key quoted', encodeURIComponent(`'${present}'`)],
      ];
  // The issue's five, and one more in turn: the parameter's own kind of breakage, or a general one.
  return [...ISSUE_SEGMENTS, ...choose([...own, ...MORE_SEGMENTS], 0, 1, salt)];
}

function pathCases(op: Operation, fixture: Fixture): Case[] {
  return op.pathParams.flatMap((param, p) =>
    segmentsFor(param, fixture, op.index * 3 + p).map(([label, segment], i) => {
      const base = baseRequest(op, fixture, i);
      return judge(op, fixture, `path ${param.name}: ${label}`, { ...base, path: { ...base.path, [param.name]: segment } });
    }),
  );
}

// ----- query

/** A query written as is, but for what cannot go on a request line (spaces, non-ASCII) and `#`. */
function onTheWire(text: string): string {
  return text.replace(/[^\x21-\x7e]|#/gu, (c) => encodeURIComponent(c));
}

const INTEGER_QUERY_VALUES = ['-1', '0', '999999999999999999999', 'abc', '-0', '10000001', '101', '1.5', '', ' ', '1e400', 'NaN', 'Infinity', 'null', 'true', '%00', '1%00', '[1]', '0xZZ', '9'.repeat(300), '0x10', '1e3', '+1', ' 100', '1.0', '700'];
const INCLUDE_VALUES = ['bogus', 'events,bogus', 'events,events', '', ',', 'events,', 'EVENTS', 'events%00', 'events, features', 'events,experiments,experiments.variants,participants,features,events', 'a'.repeat(300)];
const SORT_VALUES = ['bogus', '', 'ID', '--id', '-', 'id%00', 'name;drop table teams', 'a'.repeat(300)];

const UNKNOWN_QUERIES = [
  'foo=1',
  'unknown_parameter=',
  'page[size]=2',
  'include[]=events',
  'Page=1',
  '=1',
  '__proto__=1',
  'constructor=1',
  'hasOwnProperty=1',
  '%00=1',
  `${'p'.repeat(300)}=1`,
  'a%zz=1',
];

function queryCases(op: Operation, fixture: Fixture): Case[] {
  const queries: Array<[string, string]> = [];
  for (const [p, param] of op.queryParams.entries()) {
    const types = typesOf(param.schema);
    const salt = op.index * 5 + p;
    const values = types.has('integer')
      ? [...choose(INTEGER_QUERY_VALUES, 4, 1, salt), ...choose([`${param.name}=1&${param.name}=2`, param.name], 0, 1, salt).map((q) => ({ q }))]
      : types.has('array')
        ? [...choose(INCLUDE_VALUES, 1, 1, salt), { q: param.name }]
        : [...choose(SORT_VALUES, 1, 1, salt), { q: param.name }];
    for (const value of values) {
      if (typeof value === 'string') queries.push([`${param.name}=${JSON.stringify(value).slice(0, 40)}`, `${param.name}=${onTheWire(value)}`]);
      else queries.push([value.q.includes('&') ? `${param.name} twice` : `${param.name} without a value`, value.q]);
    }
  }
  // Every operation: parameters it does not have, including another operation's.
  for (const query of choose(UNKNOWN_QUERIES, 1, 1, op.index)) queries.push([`unknown parameter ${query.slice(0, 40)}`, onTheWire(query)]);
  const others = ['page', 'per_page', 'include', 'sort'].filter((name) => !op.queryParams.some((p) => p.name === name));
  for (const name of choose(others, 0, 1, op.index)) queries.push([`${name}, which this operation does not have`, `${name}=1`]);
  return queries.map(([label, query], i) => judge(op, fixture, `query ${label}`, { ...baseRequest(op, fixture, i), query }));
}

// ----- bodies

const NON_OBJECT_BODIES: Array<[string, string]> = [
  ['[]', '[]'],
  ['"x"', '"x"'],
  ['42', '42'],
  ['null', 'null'],
  ['true', 'true'],
  ['an array of the example', '__example_in_array__'],
  ['a 5000-deep array', '['.repeat(5000) + ']'.repeat(5000)],
];
const MALFORMED_BODIES: Array<[string, string | Buffer]> = [
  ['an unclosed object', '{'],
  ['a property without a value', '{"key":'],
  ['single quotes', "{'key':'a'}"],
  ['a trailing comma', '{"key":"a",}'],
  ['garbage after the object', '{"key":"a"}x'],
  ['two objects', '{"key":"a"}{"key":"b"}'],
  ['an unquoted name', '{key:"a"}'],
  ['a raw NUL in a string', '{"key":"a\u0000b"}'],
  ['a raw newline in a string', '{"key":"a\nb"}'],
  ['a bad escape', '{"key":"\\x41"}'],
  ['NaN', 'NaN'],
  ['only whitespace', '   '],
  ['a NUL byte', '\u0000'],
  ['a comment', '/* */ {}'],
  ['invalid UTF-8', Buffer.from('{"key":"\xff\xfe"}', 'latin1')],
  ['an unclosed 60000-deep array', '['.repeat(60_000)],
];
const CONTENT_TYPES: Array<[string, string | undefined, 'example' | 'none' | 'empty']> = [
  ['body: none at all', undefined, 'none'],
  ['body: the example as text/plain', 'text/plain', 'example'],
  ['body: empty with a JSON content type', JSON_MEDIA, 'empty'],
  ['body: the example as a form', 'application/x-www-form-urlencoded', 'example'],
  ['body: the example as XML', 'application/xml', 'example'],
  ['body: the example without a content type', undefined, 'example'],
  ['body: the example in UTF-16', 'application/json; charset=utf-16', 'example'],
  ['body: the example in Latin-1', 'application/json; charset=latin1', 'example'],
  ['body: the example as a JSON look-alike type', 'application/jsonx', 'example'],
];

/**
 * The media type of the i-th body: both that the contract offers, in turn, where it takes a body;
 * application/json elsewhere. (The validator compiles its schemas anew for every Content-Type it
 * meets on a route, so needless variety here only costs time.)
 */
function mediaFor(op: Operation, i: number): string {
  return op.body && i % 2 === 1 ? VND_MEDIA : JSON_MEDIA;
}

function bodyShapeCases(op: Operation, fixture: Fixture): Case[] {
  const cases: Case[] = [];
  const example = op.body ? stringify(op.body.example) : '{}';
  const send = (label: string, body: string | Buffer | undefined, contentType: string | undefined, i: number) => {
    const request: WireRequest = { ...baseRequest(op, fixture, i), body, contentType };
    if (body === undefined) delete request.body;
    if (contentType === undefined) delete request.contentType;
    let judged = judge(op, fixture, label, request);
    // A body the operation does not take, that parses: ignored, so a write would go through. Aim
    // it at what does not exist (404) so that it cannot change anything.
    if (!op.body && !op.isSafe && !judged.mustFail) judged = judge(op, fixture, label, elsewhere(op, request));
    cases.push(judged);
  };
  choose(NON_OBJECT_BODIES, 4, op.index % 2, op.index).forEach(([label, body], i) =>
    send(`body: not an object, ${label}`, body === '__example_in_array__' ? `[${example}]` : body, mediaFor(op, i), i),
  );
  choose(MALFORMED_BODIES, 1, 1, op.index).forEach(([label, body], i) => send(`body: malformed JSON, ${label}`, body, mediaFor(op, i), i));
  if (op.body) {
    for (const [label, contentType, body] of choose(CONTENT_TYPES, 2, 1, op.index)) {
      send(label, body === 'none' ? undefined : body === 'empty' ? '' : example, contentType, 0);
    }
  }
  return cases;
}

interface PropertyPath {
  path: string[];
  schema: Node;
}

/**
 * Every property of a body schema, and those of nested object branches (an ingest's participant
 * object, an experiment's exclusion group); a recursive schema (Condition) is walked once.
 */
function propertyPaths(schema: Node, prefix: string[] = [], inside: Set<Node> = new Set()): PropertyPath[] {
  const object = objectBranch(schema);
  if (!object || !isNode(object.properties) || inside.has(object)) return [];
  inside.add(object);
  const paths = Object.entries(object.properties as Node).flatMap(([name, property]) => [
    { path: [...prefix, name], schema: resolve(property) },
    ...propertyPaths(property, [...prefix, name], inside),
  ]);
  inside.delete(object);
  return paths;
}

/** The JSON body with `value` at `path` (a clone of `base`); `undefined` deletes it. */
function withValue(base: unknown, path: string[], value: unknown): unknown {
  const clone = structuredClone(base) as Node;
  let node = clone;
  for (const part of path.slice(0, -1)) node = node[part] as Node;
  if (value === undefined) delete node[path.at(-1)!];
  else Object.defineProperty(node, path.at(-1)!, { value, enumerable: true, writable: true, configurable: true });
  return clone;
}

interface Candidate {
  label: string;
  value?: unknown;
  /** A JSON literal written as is (numbers JSON.stringify cannot write). */
  raw?: string;
}

/** Wrong types first, then what the issue names for the type, then more extremes (chosen in turn). */
function candidatesFor(schema: Node, salt: number): Candidate[] {
  const types = typesOf(schema);
  const s = resolve(schema);
  const wrongTypes: Candidate[] = [
    { label: 'null', value: null },
    { label: 'true', value: true },
    { label: '42', value: 42 },
    { label: '"x"', value: 'x' },
    { label: '[]', value: [] },
    { label: '{}', value: {} },
  ].filter(({ value }) => {
    const type = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value;
    return !types.has(type === 'number' ? 'integer' : (type as never));
  });
  const named: Candidate[] = [];
  const more: Candidate[] = [{ label: 'a 5000-deep array', raw: '['.repeat(5000) + ']'.repeat(5000) }];
  if (types.has('string')) {
    const max = typeof s.maxLength === 'number' ? s.maxLength : 255;
    named.push(
      { label: 'a NUL', value: '\u0000' },
      { label: `${max + 1} characters`, value: 'a'.repeat(max + 1) },
      { label: 'emoji', value: '🧪🚀' },
    );
    more.push(
      { label: '70000 characters (over 64 KiB)', value: 'a'.repeat(70_000) },
      { label: 'an empty string', value: '' },
      { label: 'a space', value: ' ' },
      { label: 'a NUL inside', value: 'a\u0000b' },
      { label: 'control characters', value: '\u0001\u001f\u007f' },
      { label: 'quotes and an SQL injection', value: `x'"; DROP TABLE events; --` },
      { label: 'unicode letters', value: 'Zürich 東京 مرحبا' },
      { label: 'a lone surrogate', value: '\ud800' },
      { label: `${max} characters (the maximum)`, value: 'a'.repeat(max) },
      { label: `${max + 1} emoji`, value: '🧪'.repeat(max + 1) },
      { label: 'a number as a string', value: '50' },
    );
  }
  if (types.has('integer')) {
    const min = typeof s.minimum === 'number' ? s.minimum : 0;
    const max = typeof s.maximum === 'number' ? s.maximum : 100;
    named.push({ label: '-1', value: -1 }, { label: '1e308', value: 1e308 }, { label: '999999999999999999999', raw: '999999999999999999999' });
    more.push(
      { label: `${min} (the minimum)`, value: min },
      { label: `${max} (the maximum)`, value: max },
      { label: `${max + 1}`, value: max + 1 },
      { label: '1.5', value: 1.5 },
      { label: '2^31', value: 2 ** 31 },
      { label: '2^53', value: 2 ** 53 },
      { label: '-1e308', value: -1e308 },
      { label: '5e-324', value: 5e-324 },
      { label: '-0', raw: '-0' },
      { label: '1e400 (Infinity)', raw: '1e400' },
      { label: 'a number as a string', value: '50' },
    );
  }
  if (types.has('boolean')) more.push({ label: '"true"', value: 'true' }, { label: '1', value: 1 }, { label: '0', value: 0 });
  if (types.has('object') && isNode(s.additionalProperties)) {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    named.push({ label: '51 properties', value: many(51) }, { label: 'a 101-character name', value: { ['n'.repeat(101)]: 1 } }, { label: 'a NUL in a value', value: { plan: 'a\u0000' } });
    more.push(
      { label: 'no properties', value: {} },
      { label: '50 properties (the maximum)', value: many(50) },
      { label: 'a 100-character name', value: { ['n'.repeat(100)]: 1 } },
      { label: 'a 3000-character name', value: { ['n'.repeat(3000)]: 1 } },
      { label: 'an empty name', value: { '': 1 } },
      { label: 'a NUL in a name', value: { 'a\u0000': 1 } },
      { label: 'a __proto__ name', value: JSON.parse('{"__proto__": 1}') },
      { label: 'an object value', value: { plan: { a: 1 } } },
      { label: 'an array value', value: { plan: [1] } },
      { label: 'a null value', value: { plan: null } },
      { label: 'a 1000-character value', value: { plan: 'v'.repeat(1000) } },
      { label: 'a 1001-character value', value: { plan: 'v'.repeat(1001) } },
      { label: 'emoji in a value', value: { plan: '🧪🚀' } },
      { label: 'a value of 1e308', value: { plan: 1e308 } },
      { label: 'a value of 1e400 (Infinity)', raw: '{"plan":1e400}' },
      { label: 'a value of -0', raw: '{"plan":-0}' },
      { label: '60 properties with wrong values', value: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, { i }])) },
    );
  }
  // Two wrong types in turn (FUZZ_FIXED=all: every one), what the issue names, one more extreme in turn.
  return [...choose(wrongTypes, 0, 2, salt), ...named, ...choose(more, 0, 1, salt)];
}

/**
 * A valid body with every property, naming what exists: the goal event, experiment and variant
 * of the fixture, and on an update the resource's own key (so that a valid one renames nothing).
 */
function fullBody(op: Operation, fixture: Fixture): Node {
  const full = fullSample(op.body!.schema) as Node;
  for (const name of ['event', 'experiment', 'variant']) if (typeof full[name] === 'string') full[name] = fixture.present[name];
  const own = op.pathParams.at(-1);
  if (op.method === 'PUT' && own && typeof full.key === 'string') full.key = fixture.present[own.name];
  return full;
}

const UNKNOWN_NAMES = ['unknown_property', '__proto__', 'constructor', 'algorithm_type', 'KEY', ' key', 'key\u0000', '', 'n'.repeat(300)];

function bodyPropertyCases(op: Operation, fixture: Fixture): Case[] {
  if (!op.body) return [];
  const schema = op.body.schema;
  const full = fullBody(op, fixture);
  if (!validatorAt(op.body.schemaPointer)(full)) throw new Error(`the full sample of ${op.label} is invalid: ${JSON.stringify(full)}`);
  const bases: Array<[string, unknown]> = [
    ['the example', op.body.example],
    ['a body with every property', full],
  ];
  const cases: Case[] = [];
  let i = 0;
  const send = (label: string, text: string) => {
    const request = { ...baseRequest(op, fixture, i++), body: text };
    cases.push(judge(op, fixture, label, request));
  };
  const at = (base: unknown, path: string[]) => path.reduce<unknown>((node, part) => (isNode(node) ? node[part] : undefined), base);

  for (const [b, [baseLabel, base]] of bases.entries()) {
    // Each required property missing, from either base.
    for (const { path } of propertyPaths(schema)) {
      if (!isNode(at(base, path.slice(0, -1))) || at(base, path) === undefined || !requiredAt(schema, path)) continue;
      send(`body: ${baseLabel} without ${path.join('.')}`, stringify(withValue(base, path, undefined)));
    }
    // An unknown property, at the top and in each nested (closed) object.
    const objects = [[], ...propertyPaths(schema).map((p) => p.path).filter((path) => isNode(at(base, path)))];
    for (const [o, path] of objects.entries()) {
      if (path.length > 0 && isNode(resolve(propertySchema(schema, path)).additionalProperties)) continue; // attributes: open by design
      for (const name of choose(UNKNOWN_NAMES, 1, 1, op.index + b + o)) {
        if (name in (at(base, path) as Node)) continue;
        const where = path.length ? ` in ${path.join('.')}` : '';
        send(`body: ${baseLabel} with unknown property ${JSON.stringify(name).slice(0, 40)}${where}`, stringify(withValue(base, [...path, name], 1)));
      }
    }
  }
  // Each property set to a wrong type or an extreme value (on the body with every property).
  for (const [p, { path, schema: property }] of propertyPaths(schema).entries()) {
    for (const candidate of candidatesFor(property, op.index * 7 + p)) {
      const body = candidate.raw === undefined ? withValue(full, path, candidate.value) : withValue(full, path, RAW);
      send(`body: ${path.join('.')} = ${candidate.label}`, stringify(body, candidate.raw));
    }
  }
  return cases;
}

function propertySchema(schema: Node, path: string[]): Node {
  return path.reduce<Node>((s, part) => resolve(objectBranch(s)!.properties[part]), schema);
}

function requiredAt(schema: Node, path: string[]): boolean {
  const parent = path.length === 1 ? schema : propertySchema(schema, path.slice(0, -1));
  const object = objectBranch(parent);
  return Array.isArray(object?.required) && object.required.includes(path.at(-1));
}

/** The issue's list, for one operation. */
export function fixedCases(op: Operation, fixture: Fixture): Case[] {
  return [...credentialCases(op, fixture), ...pathCases(op, fixture), ...queryCases(op, fixture), ...bodyShapeCases(op, fixture), ...bodyPropertyCases(op, fixture)];
}

// ---------------------------------------------------------------------------------------------
// fast-check: the same kinds of breakage, with sampled values
// ---------------------------------------------------------------------------------------------

const printable = fc.stringMatching(/^[\x21-\x7e]{0,200}$/);
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.nat({ max: 3000 }).map((n) => 'a'.repeat(200 + n)),
);
const anyJsonText = fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null');
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  fc.double().map(String),
);
/** A value, or a JSON literal written as is (numbers JSON.stringify cannot write). */
type Valued = [value: unknown, raw: string | undefined];
const plain = (value: unknown): Valued => [value, undefined];
/** Wrong types and extreme values for a body property. */
const anyValue: fc.Arbitrary<Valued> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map(plain),
  anyString.map(plain),
  fc.double().map((v): Valued => (Number.isFinite(v) ? plain(v) : [RAW, v > 0 ? '1e400' : v < 0 ? '-1e400' : 'NaN'])),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map((v): Valued => [RAW, String(v)]),
  fc.dictionary(fc.string({ unit: 'binary', maxLength: 120 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 60 }).map(plain),
);

/** A random case of one of the kinds; only cases that cannot change anything unless the server is wrong. */
export function randomCase(op: Operation, fixture: Fixture): fc.Arbitrary<Case> {
  const kinds: Array<fc.Arbitrary<Case>> = [];
  const base = baseRequest(op, fixture);

  kinds.push(printable.map((token) => judge(op, fixture, `credential: Bearer ${token}`, { ...base, authorization: `Bearer ${token}` }, 401)));

  if (op.pathParams.length > 0) {
    const segment = fc.oneof(
      anyString.map(encodeURIComponent),
      numberText,
      fc.constantFrom(...[...ISSUE_SEGMENTS, ...MORE_SEGMENTS, ...TEAM_SEGMENTS].map(([, s]) => s)),
      fc.tuple(fc.constantFrom(...Object.values(fixture.present)), fc.constantFrom('%00', '%20', '%22', '%27', '%F0%9F%A7%AA', '%09', '%0A', '%7F', '%2F', '%zz'))
        .map(([value, suffix]) => encodeURIComponent(value) + suffix),
    );
    kinds.push(
      fc
        .tuple(fc.constantFrom(...op.pathParams), segment)
        .filter(([, s]) => !['', '.', '..'].includes(decodeSegment(s) ?? 'x') && !/^(%2e|\.){1,2}$/i.test(s))
        .map(([param, s]) => judge(op, fixture, `path ${param.name}: ${JSON.stringify(s).slice(0, 120)}`, { ...base, path: { ...base.path, [param.name]: s } })),
    );
  }

  const knownQuery = op.queryParams.length > 0
    ? fc.tuple(fc.constantFrom(...op.queryParams.map((p) => p.name)), fc.oneof(numberText, anyString, fc.constantFrom(...INCLUDE_VALUES, ...SORT_VALUES)))
    : undefined;
  const unknownQuery = fc.tuple(anyString.filter((name) => name !== '' && !op.queryParams.some((p) => p.name === name)), anyString);
  kinds.push(
    (knownQuery ? fc.oneof(knownQuery, unknownQuery) : unknownQuery)
      .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
      .map((query) => judge(op, fixture, `query ${query.slice(0, 120)}`, { ...base, query })),
  );

  const truncated = fc
    .tuple(fc.constant(op.body ? stringify(fullBody(op, fixture)) : '{"a":[1,{"b":"c"}]}'), fc.nat())
    .map(([text, n]) => text.slice(0, n % text.length));
  const malformed = fc.oneof(truncated, anyString, anyJsonText);
  kinds.push(
    malformed.map((text) => {
      let request: WireRequest = { ...base, body: text, contentType: JSON_MEDIA };
      const judged = judge(op, fixture, `body: ${JSON.stringify(text).slice(0, 120)}`, request);
      if (judged.mustFail || op.isSafe) return judged;
      request = elsewhere(op, request);
      return judge(op, fixture, judged.label, request);
    }),
  );

  if (op.body) {
    const schema = op.body.schema;
    const full = fullBody(op, fixture);
    const paths = propertyPaths(schema);
    kinds.push(
      fc.tuple(fc.constantFrom(...paths), anyValue).map(([{ path }, [value, raw]]) =>
        judge(op, fixture, `body: ${path.join('.')} = ${(raw ?? JSON.stringify(value) ?? 'undefined').slice(0, 120)}`, {
          ...base,
          body: stringify(withValue(full, path, value), raw),
        }),
      ),
      fc
        .tuple(anyString.filter((name) => !paths.some((p) => p.path.length === 1 && p.path[0] === name)), anyValue)
        .map(([name, [value, raw]]) =>
          judge(op, fixture, `body: unknown property ${JSON.stringify(name).slice(0, 120)}`, {
            ...base,
            body: stringify(withValue(full, [name], value), raw),
          }),
        ),
    );
  }
  // A write the contract allows would change the team: leave those to the fixed valid-extreme pass.
  return fc.oneof(...kinds).filter((c) => c.mustFail || op.isSafe);
}
