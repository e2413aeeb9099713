import type { Request } from 'express';

/** The values of `include` as the validator left them (an array of allowed names, or one comma-separated string). */
export function includeOf(req: Request): string[] {
  const value = req.query.include;
  if (value === undefined || value === '') return [];
  return Array.isArray(value) ? value.map(String) : String(value).split(',');
}
