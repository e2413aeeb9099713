import { sql } from 'kysely';
import type { Db } from '../storage/database';
import { prepared, type Bind } from '../storage/prepared';
import type { TeamRow } from '../storage/schema';
import { sameHash } from './credentials';

// Every authenticated request runs one of these two.
const liveToken = prepared((db, arg: Bind<string>) =>
  db.selectFrom('api_tokens').select(['user_id', 'token_hash', 'read_only']).where('token_hash', '=', arg((tokenHash) => tokenHash)).where('revoked_at', 'is', null),
);
const teamOfIngestKey = prepared((db, arg: Bind<string>) => db.selectFrom('teams').selectAll().where('ingest_key_hash', '=', arg((keyHash) => keyHash)));
// PostgreSQL: a batch of lookups (lookups.ts), one shape whatever their number.
const liveTokens = prepared((db, arg: Bind<string[]>) =>
  db
    .selectFrom('api_tokens')
    .select(['user_id', 'token_hash', 'read_only'])
    .where(sql<boolean>`token_hash = any(${arg((hashes) => hashes)}::text[])`)
    .where('revoked_at', 'is', null),
);
const teamsOfIngestKeys = prepared((db, arg: Bind<string[]>) =>
  db
    .selectFrom('teams')
    .selectAll()
    .where(sql<boolean>`ingest_key_hash = any(${arg((hashes) => hashes)}::text[])`),
);

/** A live token's user, and whether the token only reads. */
export interface TokenHolder {
  userId: number;
  readOnly: boolean;
}

/** The user of a live (not revoked) API token, by the token's hash. */
export async function findUserIdByTokenHash(db: Db, tokenHash: string): Promise<TokenHolder | undefined> {
  const [row] = await liveToken(db, tokenHash);
  return row && sameHash(row.token_hash, tokenHash) ? { userId: row.user_id, readOnly: Boolean(row.read_only) } : undefined;
}

/**
 * The team whose current ingest key has this hash; a rotated-out key matches no team. The whole
 * row: the routes of the key's own team use it instead of reading it again.
 */
export async function findTeamByIngestKeyHash(db: Db, keyHash: string): Promise<TeamRow | undefined> {
  const [row] = await teamOfIngestKey(db, keyHash);
  return row && sameHash(row.ingest_key_hash, keyHash) ? row : undefined;
}

/** PostgreSQL: the users of the live API tokens among these hashes, by hash. */
export async function findUserIdsByTokenHashes(db: Db, tokenHashes: string[]): Promise<Map<string, TokenHolder>> {
  const found = new Map<string, TokenHolder>();
  for (const row of await liveTokens(db, tokenHashes)) {
    const hash = tokenHashes.find((candidate) => sameHash(row.token_hash, candidate));
    if (hash !== undefined) found.set(hash, { userId: row.user_id, readOnly: Boolean(row.read_only) });
  }
  return found;
}

/** PostgreSQL: the teams whose current ingest key has one of these hashes, by hash. */
export async function findTeamsByIngestKeyHashes(db: Db, keyHashes: string[]): Promise<Map<string, TeamRow>> {
  const found = new Map<string, TeamRow>();
  for (const row of await teamsOfIngestKeys(db, keyHashes)) {
    const hash = keyHashes.find((candidate) => sameHash(row.ingest_key_hash, candidate));
    if (hash !== undefined) found.set(hash, row);
  }
  return found;
}

/** An API token by its hash, revoked or not: what the admin CLI revokes. */
export async function findTokenByHash(db: Db, tokenHash: string): Promise<{ id: number; user_id: number; revoked: boolean } | undefined> {
  const row = await db
    .selectFrom('api_tokens')
    .select(['id', 'user_id', 'token_hash', 'revoked_at'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  return row && sameHash(row.token_hash, tokenHash) ? { id: row.id, user_id: row.user_id, revoked: row.revoked_at !== null } : undefined;
}
