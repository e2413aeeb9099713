import type { Request } from 'express';
import type { components } from '../../generated/api';
import { BadRequest } from './errors';

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

/** `page` and `per_page` as the validator left them (typed and within bounds). */
export function pageRequest(req: Request): PageRequest {
  const page = whole(req, 'page', 1, 10_000_000, 1);
  const perPage = whole(req, 'per_page', 1, 100, 15);
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
  const link = (page: number) => pageLink(req, page, request.perPage);
  return {
    data,
    meta: { current_page: request.page, per_page: request.perPage, total, last_page: lastPage },
    links: {
      first: link(1),
      last: link(lastPage),
      prev: request.page > 1 ? link(Math.min(request.page - 1, lastPage)) : null,
      next: request.page < lastPage ? link(request.page + 1) : null,
    },
  };
}

function pageLink(req: Request, page: number, perPage: number): string {
  const url = new URL(req.originalUrl, 'http://localhost');
  url.searchParams.set('page', String(page));
  url.searchParams.set('per_page', String(perPage));
  return url.pathname + url.search;
}
