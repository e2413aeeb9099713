import type { Request } from 'express';

/** A path parameter of a parent router (mergeParams), which Express's types do not carry. */
export function pathParam(req: Request, name: string): string {
  return (req.params as Record<string, string>)[name];
}
