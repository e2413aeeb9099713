import type { components } from '../../generated/api';
import { listEvents, toEvent } from '../events/store';
import { describeExperiments } from '../experiments/service';
import { listExperiments } from '../experiments/store';
import { listFeatures, toFeature } from '../features/store';
import { NotFound } from '../http/errors';
import type { PageRequest } from '../routes/pagination';
import { listParticipants, toParticipant } from '../participants/store';
import type { Db } from '../storage/database';
import { actingRole, type MemberRole } from '../../domain/member-roles';
import { countsOf, countTeamsOf, findTeamOfUser, listTeamsOf, toTeam, type TeamRow, type TeamSort } from '../teams/store';

type Team = components['schemas']['Team'];
type User = components['schemas']['User'];
export type Include = 'events' | 'experiments' | 'experiments.variants' | 'participants' | 'features';

const EMBEDDED_MAX = 100;

export async function getUser(db: Db, userId: number): Promise<User> {
  const user = await db.selectFrom('users').select(['id', 'name', 'email', 'current_team_id']).where('id', '=', userId).executeTakeFirstOrThrow();
  return user;
}

/** The caller of the user operations: an API token's user, and whether the token is read-only. */
export interface TokenUser {
  userId: number;
  readOnly: boolean;
}

export async function getCurrentTeam(db: Db, { userId, readOnly }: TokenUser): Promise<Team> {
  const user = await getUser(db, userId);
  const found = user.current_team_id === null ? undefined : await findTeamOfUser(db, user.current_team_id, userId);
  if (!found) throw new NotFound('The user has no current team.');
  return describeTeam(db, found.team, [], found.role && actingRole(found.role, readOnly));
}

export async function listTeams(db: Db, { userId, readOnly }: TokenUser, sort: TeamSort, include: Include[], page: PageRequest) {
  const [rows, total] = await Promise.all([listTeamsOf(db, userId, sort, page.perPage, page.offset), countTeamsOf(db, userId)]);
  const items = await Promise.all(rows.map(({ role, ...row }) => describeTeam(db, row, include, actingRole(role, readOnly))));
  return { items, total };
}

/** A team with its totals, the caller's role in it and, as asked by `include`, up to 100 of each related resource. */
export async function describeTeam(db: Db, team: TeamRow, include: Include[], role?: MemberRole): Promise<Team> {
  const described = toTeam(team, await countsOf(db, team.id));
  if (role) described.role = role;
  const wants = (what: Include) => include.includes(what);
  if (wants('events')) described.events = (await listEvents(db, team.id, EMBEDDED_MAX, 0)).map(toEvent);
  if (wants('experiments') || wants('experiments.variants')) {
    const rows = await listExperiments(db, team.id, EMBEDDED_MAX, 0);
    described.experiments = await describeExperiments(db, team, rows, wants('experiments.variants') ? ['variants'] : []);
  }
  if (wants('participants')) described.participants = (await listParticipants(db, team.id, EMBEDDED_MAX, 0)).map(toParticipant);
  if (wants('features')) described.features = (await listFeatures(db, team.id, EMBEDDED_MAX, 0)).map(toFeature);
  return described;
}
