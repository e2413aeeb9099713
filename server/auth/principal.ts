import type { Response } from 'express';
import type { TeamRow } from '../teams/store';

/** Who is calling: a user (API token) or a team's ingest key, with the team's row as authentication read it. */
export type Principal = { kind: 'user'; userId: number } | { kind: 'ingest-key'; team: TeamRow };

export function principalOf(res: Response): Principal {
  return res.locals.principal as Principal;
}
