import type { Db } from './database';

type TeamTable = 'events' | 'experiments' | 'features' | 'participants';

/** How many rows of a team-owned table belong to the team. */
export async function countInTeam(db: Db, table: TeamTable, teamId: number): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('team_id', '=', teamId)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}
