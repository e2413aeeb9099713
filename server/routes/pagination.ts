import type { Request } from 'express';
import type { components } from '../../generated/api';
import { BadRequest } from '../http/errors';

type Meta = components['schemas']['PaginationMeta'];
type Links = components['schemas']['PaginationLinks'];

export interface PageRequest {
  page: number;
  perPage: number;
  offset: number;
}

export interface Page<T> {
  data: T[];
  meta: Meta;
  links: Links;
}

/**
 * How deep a page may reach: `page × per_page` at most 10 000 items. A page is read by skipping
 * the items before it, whose cost grows with its depth (150 000 participants: 135–150 ms of the
 * event loop for the last page, and reading them all grows with the square of the list); bounded,
 * the deepest page costs what the 10 000th item does. Lists a team may only hold 500 of never
 * reach it; only participants, which have no limit, do.
 */
export const DEEPEST_ITEM = 10_000;

/** The deepest page a request may ask for at `perPage` items a page. */
export function deepestPage(perPage: number): number {
  return Math.floor(DEEPEST_ITEM / perPage);
}

/** `page` and `per_page` as the validator left them (typed and within bounds), and within the depth bound. */
export function pageRequest(req: Request): PageRequest {
  const page = whole(req, 'page', 1, 10_000_000, 1);
  const perPage = whole(req, 'per_page', 1, 100, 15);
  const deepest = deepestPage(perPage);
  if (page > deepest) {
    throw new BadRequest(`page ${page} would reach past the ${DEEPEST_ITEM}th item; with per_page=${perPage} a page may be at most ${deepest}.`, [
      { path: '/query/page', message: `must be at most ${deepest} with per_page=${perPage}` },
    ]);
  }
  return { page, perPage, offset: (page - 1) * perPage };
}


// The validator passes `Infinity` and `1e400` as integers; SQL would not.
function whole(req: Request, name: string, min: number, max: number, fallback: number): number {
  const value = req.query[name] === undefined ? fallback : Number(req.query[name]);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new BadRequest(`${name} must be a whole number from ${min} to ${max}.`, [{ path: `/query/${name}`, message: `must be an integer from ${min} to ${max}` }]);
  }
  return value;
}

export function paginated<T>(req: Request, data: T[], total: number, request: PageRequest): Page<T> {
  const lastPage = Math.max(1, Math.ceil(total / request.perPage));
  // The links lead only to pages a request may ask for.
  const lastLinked = Math.min(lastPage, deepestPage(request.perPage));
  const link = (page: number) => pageLink(req, page, request.perPage);
  return {
    data,
    meta: { current_page: request.page, per_page: request.perPage, total, last_page: lastPage },
    links: {
      first: link(1),
      last: link(lastLinked),
      prev: request.page > 1 ? link(Math.min(request.page - 1, lastLinked)) : null,
      next: request.page < lastLinked ? link(request.page + 1) : null,
    },
  };
}

function pageLink(req: Request, page: number, perPage: number): string {
  const url = new URL(req.originalUrl, 'http://localhost');
  url.searchParams.set('page', String(page));
  url.searchParams.set('per_page', String(perPage));
  return url.pathname + url.search;
}
