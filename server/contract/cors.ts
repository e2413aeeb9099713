import cors from 'cors';
import type { RequestHandler } from 'express';
import type { ContractDocument } from './document';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

/** What a browser may send cross-origin: the bearer credential, a JSON body, and an SDK's config revalidation and stream resumption. */
export const CORS_ALLOWED_HEADERS = 'Authorization, Content-Type, If-None-Match, Last-Event-ID, X-API-Key';
/** Answer headers a page may read besides the CORS-safelisted ones (ETag: for If-None-Match). */
export const CORS_EXPOSED_HEADERS = 'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, ETag';
/** How long a browser may reuse a preflight's answer: 2 hours, the most Chromium honours. */
export const CORS_MAX_AGE_SECONDS = 7200;

/**
 * CORS for every origin, on every answer (errors, 404 and 405 included): credentials are bearer
 * tokens, never cookies, so `*` lets a page act only with a credential it was given.
 *
 * A preflight — OPTIONS with `Origin` and `Access-Control-Request-Method` — on a path of the
 * contract is answered here, 204, with that path's methods; it is not counted against a rate
 * limit (browsers send it without credentials, on their own, and cache it for Max-Age) and does
 * nothing else. Any other OPTIONS goes on to the contract's routing, which answers 405 with
 * `Allow`, as info.description says.
 */
export function corsHandler(document: ContractDocument): RequestHandler {
  // One preflight answer per path of the contract, listing that path's methods.
  const preflights = Object.entries(document.paths).map(([template, item]) => ({
    pattern: new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]+') + '$'),
    answer: cors({
      origin: '*',
      methods: METHODS.filter((method) => item[method] !== undefined)
        .map((method) => method.toUpperCase())
        .join(', '),
      allowedHeaders: CORS_ALLOWED_HEADERS,
      maxAge: CORS_MAX_AGE_SECONDS,
      optionsSuccessStatus: 204,
    }),
  }));
  return (req, res, next) => {
    const isPreflight = req.method === 'OPTIONS' && req.get('origin') !== undefined && req.get('access-control-request-method') !== undefined;
    const preflight = isPreflight ? preflights.find((candidate) => candidate.pattern.test(req.path)) : undefined;
    if (preflight) return preflight.answer(req, res, next);
    // What the cors package adds to any other answer for origin '*', set without its per-request
    // option handling (about 6 % of a config read's CPU): the origin and the exposed headers.
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS);
    next();
  };
}
