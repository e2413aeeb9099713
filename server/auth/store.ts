import type { Db } from '../storage/database';

export async function findUserIdByTokenHash(db: Db, tokenHash: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('api_tokens')
    .select('user_id')
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row?.user_id;
}

export async function findTeamIdByIngestKeyHash(db: Db, keyHash: string): Promise<number | undefined> {
  const row = await db.selectFrom('teams').select('id').where('ingest_key_hash', '=', keyHash).executeTakeFirst();
  return row?.id;
}
