import contentType from 'content-type';
import express, { type RequestHandler } from 'express';
import { toMicros, VALUE_DECIMALS } from '../../domain/metric';
import { BadRequest, UnsupportedMediaType } from '../http/errors';
import { pageRequest } from '../routes/pagination';
import { operationOf } from './routing';

/** Bytes a body may have: 64 KiB, and 1 MiB for a batch of ingests (up to 500 of them). */
export const BODY_LIMIT = 64 * 1024;
const BATCH_BODY_LIMIT = 1024 * 1024;
const JSON_TYPES = ['application/json', 'application/vnd.api+json'];

/**
 * Query strings the validator would misread, choke on or let through: `include[]=x` (read as
 * `include`), parameters without a value (`?page` throws inside it) and integers not written as
 * plain decimal digits: its coercion is Number(), which reads `0x10`, `1e3`, `+1` and ` 100` as
 * numbers and lets `Infinity` and `1e400` past the bounds. Refused as 400 before it runs — except a list parameter without a value (`include=`), the empty list: dropped.
 */
export const plainQueryOnly: RequestHandler = (req, res, next) => {
  const [path, query] = req.url.split('?', 2) as [string, string | undefined];
  if (!query) return next();
  const operation = res.locals.operation ? operationOf(res) : undefined;
  const pairs = query.split('&');
  const kept: string[] = [];
  for (const pair of pairs) {
    const [name, value] = pair.split('=', 2) as [string, string | undefined];
    const decoded = decodeSafely(name);
    if (/[[\]]|%5B|%5D/i.test(name)) throw new BadRequest(`Unknown query parameter '${decoded}'.`, [{ path: `/query/${decoded}`, message: 'is not a parameter of this operation' }]);
    if (!value && operation?.listParameters.has(decoded)) continue;
    if (!value) throw new BadRequest(`Query parameter '${decoded}' has no value.`, [{ path: `/query/${decoded}`, message: 'must have a value' }]);
    const bounds = operation?.integerParameters.get(decoded);
    if (bounds && !isDecimal(decodeSafely(value))) {
      const { minimum, maximum } = bounds;
      throw new BadRequest(`${decoded} must be a decimal integer from ${minimum} to ${maximum}.`, [{ path: `/query/${decoded}`, message: `must be a decimal integer from ${minimum} to ${maximum}` }]);
    }
    kept.push(pair);
  }
  if (kept.length < pairs.length) req.url = req.originalUrl = kept.length > 0 ? `${path}?${kept.join('&')}` : path;
  next();
};

/** Decimal digits and nothing else (no sign, exponent, hex prefix, fraction or space), and finite. */
function isDecimal(value: string): boolean {
  return /^[0-9]+$/.test(value) && Number.isFinite(Number(value));
}

/**
 * Content-Type as the validator may see it: it compiles and keeps a validator per distinct
 * header value for each route, never evicted, so every new value — `application/x-1`, `x-2`, …,
 * or `application/json; x=1`, `; x=2` — would grow memory without bound, no credential needed.
 * Only a bare JSON media type (`charset=utf-8` is the one parameter allowed) passes: on an
 * operation that takes a body anything else is a 415 here; on one that takes none the header is
 * dropped (there is nothing to read it for), unless it is JSON, whose body must still parse.
 */
export const bareContentType: RequestHandler = (req, res, next) => {
  const header = req.headers['content-type'];
  if (header === undefined || res.locals.operation === undefined) return next();
  const type = jsonMediaType(header);
  if (type !== undefined) req.headers['content-type'] = type;
  else if (operationOf(res).takesBody) throw new UnsupportedMediaType();
  else delete req.headers['content-type'];
  next();
};

function jsonMediaType(header: string): string | undefined {
  let parsed: contentType.ParsedMediaType;
  try {
    parsed = contentType.parse(header);
  } catch {
    return undefined;
  }
  const { charset, ...others } = parsed.parameters;
  const plain = Object.keys(others).length === 0 && (charset === undefined || charset.toLowerCase() === 'utf-8');
  return plain && JSON_TYPES.includes(parsed.type) ? parsed.type : undefined;
}

const emptyBodies = new WeakSet<object>();
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON bodies: strictly UTF-8 (no silent U+FFFD), and an empty body is no body — not `{}`. */
export function jsonBodies(): RequestHandler[] {
  const parser = (limit: number) =>
    express.json({
      type: JSON_TYPES,
      limit,
      verify: (req, _res, bytes) => {
        if (bytes.length === 0) emptyBodies.add(req);
        try {
          utf8.decode(bytes);
        } catch {
          throw Object.assign(new Error('The body is not valid UTF-8.'), { status: 400 });
        }
      },
    });
  const [single, batch] = [parser(BODY_LIMIT), parser(BATCH_BODY_LIMIT)];
  const parse: RequestHandler = (req, res, next) => (res.locals.operation && operationOf(res).operationId === 'ingest_batch' ? batch : single)(req, res, next);
  const dropEmpty: RequestHandler = (req, res, next) => {
    if (!emptyBodies.has(req)) return next();
    if (res.locals.operation && operationOf(res).takesBody) throw new BadRequest('The body is empty; send a JSON object.', [{ path: '/body', message: 'is required' }]);
    req.body = undefined;
    next();
  };
  return [parse, dropEmpty];
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Every string of a body, property names included, is well-formed Unicode. JSON can escape a lone
 * surrogate (`"\ud800"`), which the UTF-8 check of the raw bytes does not see; stored, it turns
 * into U+FFFD or invalid UTF-8, and two different keys into the same one. (Paths and queries
 * cannot carry one: percent-decoding is UTF-8, which has no encoding for a surrogate.)
 */
export const wellFormedText: RequestHandler = (req, _res, next) => {
  const where = malformedIn(req.body);
  if (where !== undefined) {
    const message = 'must be well-formed Unicode (no lone surrogates)';
    throw new BadRequest(`${where} ${message}`, [{ path: where, message }]);
  }
  next();
};

/** The JSON pointer of a string (or property name) in the body that is not well-formed. */
function malformedIn(body: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[body, '/body']];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, at] = next;
    if (typeof value === 'string' && !value.isWellFormed()) return at;
    if (value === null || typeof value !== 'object') continue;
    for (const [name, item] of Object.entries(value)) {
      if (!name.isWellFormed()) return `${at}/${name.toWellFormed()}`;
      pending.push([item, `${at}/${name}`]);
    }
  }
  return undefined;
}

/**
 * Numbers the contract allows at most six decimals (`VALUE_DECIMALS`), by operation: an event's
 * `cap` and an ingest's `value`. Checked at the gate, so that the mock, which stores nothing,
 * refuses them as the server does (400 naming the field).
 */
const DECIMAL_FIELDS: Record<string, (body: any) => Array<[string, unknown]>> = {
  events_create: (body) => [['/body/cap', body?.cap]],
  events_update: (body) => [['/body/cap', body?.cap]],
  ingest: (body) => [['/body/value', body?.value]],
  ingest_batch: (body) => (Array.isArray(body?.items) ? body.items.map((item: any, i: number) => [`/body/items/${i}/value`, item?.value]) : []),
};

export const sixDecimals: RequestHandler = (req, res, next) => {
  const fields = res.locals.operation && DECIMAL_FIELDS[operationOf(res).operationId];
  for (const [path, value] of fields ? fields(req.body) : []) {
    if (typeof value === 'number' && toMicros(value) === null) {
      const message = `must have at most ${VALUE_DECIMALS} decimals`;
      throw new BadRequest(`${path} ${message}.`, [{ path, message }]);
    }
  }
  next();
};

/** The depth bound for every operation with a `page` (the server's and the mock's gate): 400 naming `page`. */
export const pageDepthGuard: RequestHandler = (req, res, next) => {
  if (operationOf(res).integerParameters.has('page')) pageRequest(req);
  next();
};
