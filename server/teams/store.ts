import type { components } from '../../generated/api';
import { countInTeam } from '../storage/counts';
import type { MemberRole } from '../../domain/member-roles';
import type { Db } from '../storage/database';
import type { TeamRow } from '../storage/schema';
import { iso } from '../storage/values';
import { quotaMonth } from './quota';

type Team = components['schemas']['Team'];
export type { TeamRow };
export type TeamSort = 'id' | '-id' | 'name' | '-name' | 'created_at' | '-created_at';

export async function findTeam(db: Db, teamId: number): Promise<TeamRow | undefined> {
  return db.selectFrom('teams').selectAll().where('id', '=', teamId).executeTakeFirst();
}

/** A team, and the user's role in it (undefined when the user is not a member), in one query. */
export async function findTeamOfUser(db: Db, teamId: number, userId: number): Promise<{ team: TeamRow; role: MemberRole | undefined } | undefined> {
  const row = await db
    .selectFrom('teams')
    .leftJoin('memberships', (join) => join.onRef('memberships.team_id', '=', 'teams.id').on('memberships.user_id', '=', userId))
    .selectAll('teams')
    .select('memberships.role as member_role')
    .where('teams.id', '=', teamId)
    .executeTakeFirst();
  if (!row) return undefined;
  const { member_role, ...team } = row;
  return { team, role: member_role ?? undefined };
}

export async function countTeamsOf(db: Db, userId: number): Promise<number> {
  const row = await db
    .selectFrom('memberships')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/** The user's teams, each with the user's role in it. */
export async function listTeamsOf(db: Db, userId: number, sort: TeamSort, limit: number, offset: number): Promise<Array<TeamRow & { role: MemberRole }>> {
  const column = sort.replace(/^-/, '') as 'id' | 'name' | 'created_at';
  const direction = sort.startsWith('-') ? 'desc' : 'asc';
  return db
    .selectFrom('teams')
    .innerJoin('memberships', 'memberships.team_id', 'teams.id')
    .selectAll('teams')
    .select('memberships.role')
    .where('memberships.user_id', '=', userId)
    .orderBy(`teams.${column}`, direction)
    .orderBy('teams.id', direction)
    .limit(limit)
    .offset(offset)
    .execute();
}

export async function countsOf(db: Db, teamId: number) {
  const [events, experiments, participants, ingestUsed] = await Promise.all([
    countInTeam(db, 'events', teamId),
    countInTeam(db, 'experiments', teamId),
    countInTeam(db, 'participants', teamId),
    ingestsThisMonth(db, teamId),
  ]);
  return { events, experiments, participants, ingestUsed };
}

/** The ingests the team has had accepted this calendar month (UTC), as its quota counts them. */
async function ingestsThisMonth(db: Db, teamId: number): Promise<number> {
  const row = await db
    .selectFrom('ingest_usage')
    .select('count')
    .where('team_id', '=', teamId)
    .where('month', '=', quotaMonth(new Date().toISOString()))
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

export function toTeam(row: TeamRow, counts: { events: number; experiments: number; participants: number; ingestUsed: number }): Team {
  return {
    id: row.id,
    name: row.name,
    events_count: counts.events,
    experiments_count: counts.experiments,
    participants_count: counts.participants,
    ingest_limit: row.ingest_limit,
    ingest_used: counts.ingestUsed,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
