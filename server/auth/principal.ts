import type { Response } from 'express';
import type { TeamRow } from '../storage/schema';

/**
 * Who is calling: a user (API token; `readOnly` when the token was issued read-only) or a team's
 * ingest key, with the team's row as authentication read it.
 */
export type Principal = { kind: 'user'; userId: number; readOnly: boolean } | { kind: 'ingest-key'; team: TeamRow };

export function principalOf(res: Response): Principal {
  return res.locals.principal as Principal;
}
