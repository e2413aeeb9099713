import type { components } from '../../generated/api';
import { ADMIN_CLI, record, recordInTeams } from '../audit/service';
import { hashCredential, kindOf, newCredential } from '../auth/credentials';
import { findTokenByHash } from '../auth/store';
import { BadRequest, NotFound } from '../http/errors';
import type { MemberRole } from '../../domain/member-roles';
import type { Db } from '../storage/database';
import { now } from '../storage/values';
import { getUser } from '../users/service';
import { countsOf, toTeam } from '../teams/store';

type Team = components['schemas']['Team'];
type User = components['schemas']['User'];

export interface CreatedTeam {
  team: Team;
  user: User;
  token: string;
  ingest_key: string;
}

/** Creates (or reuses) the user, a team it is member of and current in, a token for it and the team's ingest key. */
export async function createTeam(db: Db, input: { name: string; email: string }): Promise<CreatedTeam> {
  const token = newCredential('api-token');
  const ingestKey = newCredential('ingest-key');
  const at = now();
  const userId = await db.transaction().execute(async (trx) => {
    const team = await trx
      .insertInto('teams')
      .values({ name: input.name, ingest_key_hash: hashCredential(ingestKey), ingest_limit: null, created_at: at, updated_at: at })
      .returningAll()
      .executeTakeFirstOrThrow();
    const user = await findOrCreateUser(trx, input.email, at);
    await trx.insertInto('memberships').values({ team_id: team.id, user_id: user }).execute();
    await trx.updateTable('users').set({ current_team_id: team.id }).where('id', '=', user).execute();
    await trx.insertInto('api_tokens').values({ user_id: user, token_hash: hashCredential(token), created_at: at }).execute();
    const key = String(team.id);
    await record(trx, team.id, ADMIN_CLI, { resource: 'team', key, action: 'created', before: null, after: { id: team.id, name: team.name } });
    await record(trx, team.id, ADMIN_CLI, { resource: 'member', key: input.email, action: 'created', before: null, after: { email: input.email, role: 'admin' } });
    await record(trx, team.id, ADMIN_CLI, { resource: 'ingest-key', key, action: 'issued', before: null, after: { team_id: team.id } });
    await recordInTeams(trx, await teamsOf(trx, user), ADMIN_CLI, tokenIssued(input.email, false));
    return user;
  });
  const user = await getUser(db, userId);
  const team = await db.selectFrom('teams').selectAll().where('id', '=', user.current_team_id ?? 0).executeTakeFirstOrThrow();
  return { team: toTeam(team, await countsOf(db, team.id)), user, token, ingest_key: ingestKey };
}

/** A new API token for the user; `readOnly`: it acts as `viewer` in every team, whatever the user's role. */
export async function createToken(db: Db, email: string, { readOnly = false } = {}): Promise<{ user: User; token: string; read_only: boolean }> {
  const user = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
  if (!user) throw new NotFound(`No user with e-mail ${email}.`);
  const token = newCredential('api-token');
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('api_tokens').values({ user_id: user.id, token_hash: hashCredential(token), created_at: now(), read_only: readOnly }).execute();
    await recordInTeams(trx, await teamsOf(trx, user.id), ADMIN_CLI, tokenIssued(email, readOnly));
  });
  return { user: await getUser(db, user.id), token, read_only: readOnly };
}

/**
 * Makes the user (created if new) a member of the team with this role, or changes the role of a
 * member; takes effect on the next request, which looks the role up.
 */
export async function setRole(db: Db, teamId: number, email: string, role: MemberRole): Promise<{ team: Team; user: User; role: MemberRole; previous: MemberRole | null }> {
  const { userId, previous } = await db.transaction().execute(async (trx) => {
    const team = await trx.selectFrom('teams').select('id').where('id', '=', teamId).executeTakeFirst();
    if (!team) throw new NotFound(`No team ${teamId}.`);
    const userId = await findOrCreateUser(trx, email, now());
    const before = await trx.selectFrom('memberships').select('role').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
    await trx
      .insertInto('memberships')
      .values({ team_id: teamId, user_id: userId, role })
      .onConflict((oc) => oc.columns(['team_id', 'user_id']).doUpdateSet({ role }))
      .execute();
    if (before?.role !== role) {
      await record(trx, teamId, ADMIN_CLI, before ? { resource: 'member', key: email, action: 'updated', before: { role: before.role }, after: { role } } : { resource: 'member', key: email, action: 'created', before: null, after: { email, role } });
    }
    return { userId, previous: before?.role ?? null };
  });
  const team = await db.selectFrom('teams').selectAll().where('id', '=', teamId).executeTakeFirstOrThrow();
  return { team: toTeam(team, await countsOf(db, teamId)), user: await getUser(db, userId), role, previous };
}

export async function setQuota(db: Db, teamId: number, ingestLimit: number | null): Promise<Team> {
  const team = await db.transaction().execute(async (trx) => {
    const before = await trx.selectFrom('teams').select('ingest_limit').where('id', '=', teamId).executeTakeFirst();
    if (!before) throw new NotFound(`No team ${teamId}.`);
    const updated = await trx.updateTable('teams').set({ ingest_limit: ingestLimit, updated_at: now() }).where('id', '=', teamId).returningAll().executeTakeFirstOrThrow();
    await record(trx, teamId, ADMIN_CLI, { resource: 'team', key: String(teamId), action: 'updated', before: { ingest_limit: before.ingest_limit }, after: { ingest_limit: ingestLimit } });
    return updated;
  });
  return toTeam(team, await countsOf(db, team.id));
}

export interface Revoked {
  user: User;
  /** How many tokens this run revoked: 0 when they already were. */
  revoked: number;
}

/**
 * Revokes one API token, found by the token itself (its hash; the token is never stored, printed
 * or put in an error). Takes effect on the next request: every request looks its credential up.
 * Revoking a revoked token changes nothing and says so (`revoked: 0`).
 */
export async function revokeToken(db: Db, token: string): Promise<Revoked> {
  if (kindOf(token) !== 'api-token') throw new BadRequest('That is not an API token.');
  const found = await findTokenByHash(db, hashCredential(token));
  if (!found) throw new NotFound('No such API token.');
  const user = await getUser(db, found.user_id);
  const revoked = await db.transaction().execute(async (trx) => {
    const result = await trx.updateTable('api_tokens').set({ revoked_at: now() }).where('id', '=', found.id).where('revoked_at', 'is', null).executeTakeFirst();
    const count = Number(result.numUpdatedRows);
    if (count > 0) await recordInTeams(trx, await teamsOf(trx, found.user_id), ADMIN_CLI, tokensRevoked(user.email, count));
    return count;
  });
  return { user, revoked };
}

/** Revokes every live API token of a user. */
export async function revokeAllTokens(db: Db, email: string): Promise<Revoked> {
  const user = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
  if (!user) throw new NotFound(`No user with e-mail ${email}.`);
  const revoked = await db.transaction().execute(async (trx) => {
    const result = await trx.updateTable('api_tokens').set({ revoked_at: now() }).where('user_id', '=', user.id).where('revoked_at', 'is', null).executeTakeFirst();
    const count = Number(result.numUpdatedRows);
    if (count > 0) await recordInTeams(trx, await teamsOf(trx, user.id), ADMIN_CLI, tokensRevoked(email, count));
    return count;
  });
  return { user: await getUser(db, user.id), revoked };
}

/** Gives a team a new ingest key; the old one matches no team from the next request on. */
export async function rotateIngestKey(db: Db, teamId: number): Promise<{ team: Team; ingest_key: string }> {
  const ingestKey = newCredential('ingest-key');
  const team = await db.transaction().execute(async (trx) => {
    const rotated = await trx.updateTable('teams').set({ ingest_key_hash: hashCredential(ingestKey), updated_at: now() }).where('id', '=', teamId).returningAll().executeTakeFirst();
    if (!rotated) throw new NotFound(`No team ${teamId}.`);
    // One entry: the new key is issued, and the previous one stops matching with it.
    await record(trx, teamId, ADMIN_CLI, { resource: 'ingest-key', key: String(teamId), action: 'issued', before: null, after: { team_id: teamId, replaces_previous: true } });
    return rotated;
  });
  return { team: toTeam(team, await countsOf(db, team.id)), ingest_key: ingestKey };
}

/** Atomic under concurrency: when another run creates the same e-mail first, the insert does nothing and the select finds it. */
async function findOrCreateUser(db: Db, email: string, at: string): Promise<number> {
  const created = await db
    .insertInto('users')
    .values({ name: email.split('@')[0], email, current_team_id: null, created_at: at })
    .onConflict((oc) => oc.column('email').doNothing())
    .returning('id')
    .executeTakeFirst();
  if (created) return created.id;
  const existing = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
  return existing.id;
}

async function teamsOf(db: Db, userId: number): Promise<number[]> {
  const rows = await db.selectFrom('memberships').select('team_id').where('user_id', '=', userId).orderBy('team_id').execute();
  return rows.map((row) => row.team_id);
}

/** An API token as the audit log describes it: whose, and whether read-only — never the token. */
function tokenIssued(email: string, readOnly: boolean) {
  return { resource: 'api-token', key: email, action: 'issued', before: null, after: { user: email, read_only: readOnly } } as const;
}

function tokensRevoked(email: string, count: number) {
  return { resource: 'api-token', key: email, action: 'revoked', before: { user: email, tokens: count }, after: null } as const;
}
