import type { Request } from 'express';
import type { components } from '../../generated/api';

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
  const page = Number(req.query.page ?? 1);
  const perPage = Number(req.query.per_page ?? 15);
  return { page, perPage, offset: (page - 1) * perPage };
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
