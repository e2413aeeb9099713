import type { Response } from 'express';

/** Who is calling: a user (API token) or a team's ingest key. */
export type Principal = { kind: 'user'; userId: number } | { kind: 'ingest-key'; teamId: number };

export function principalOf(res: Response): Principal {
  return res.locals.principal as Principal;
}
