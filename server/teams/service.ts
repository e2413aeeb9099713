import type { components } from '../../generated/api';
import { listEvents, toEvent } from '../events/store';
import { describeExperiments } from '../experiments/service';
import { listExperiments } from '../experiments/store';
import { listFeatures, toFeature } from '../features/store';
import { NotFound } from '../http/errors';
import type { PageRequest } from '../routes/pagination';
import { listParticipants, toParticipant } from '../participants/store';
import type { Db } from '../storage/database';
import { countsOf, countTeamsOf, findTeam, listTeamsOf, toTeam, type TeamRow, type TeamSort } from './store';

type Team = components['schemas']['Team'];
type User = components['schemas']['User'];
export type Include = 'events' | 'experiments' | 'experiments.variants' | 'participants' | 'features';

const EMBEDDED_MAX = 100;

export async function getUser(db: Db, userId: number): Promise<User> {
  const user = await db.selectFrom('users').select(['id', 'name', 'email', 'current_team_id']).where('id', '=', userId).executeTakeFirstOrThrow();
  return user;
}

export async function getCurrentTeam(db: Db, userId: number): Promise<Team> {
  const user = await getUser(db, userId);
  const team = user.current_team_id === null ? undefined : await findTeam(db, user.current_team_id);
  if (!team) throw new NotFound('The user has no current team.');
  return describeTeam(db, team, []);
}

export async function listTeams(db: Db, userId: number, sort: TeamSort, include: Include[], page: PageRequest) {
  const [rows, total] = await Promise.all([listTeamsOf(db, userId, sort, page.perPage, page.offset), countTeamsOf(db, userId)]);
  const items = await Promise.all(rows.map((row) => describeTeam(db, row, include)));
  return { items, total };
}

/** A team with its totals and, as asked by `include`, up to 100 of each related resource. */
export async function describeTeam(db: Db, team: TeamRow, include: Include[]): Promise<Team> {
  const described = toTeam(team, await countsOf(db, team.id));
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
