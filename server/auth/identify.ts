import type { Db } from '../storage/database';
import { hashCredential, kindOf } from './credentials';
import type { Principal } from './principal';
import type { Engine } from '../storage/engine';
import { batchedLookup } from './lookups';
import { findTeamByIngestKeyHash, findTeamsByIngestKeyHashes, findUserIdByTokenHash, findUserIdsByTokenHashes } from './store';

/** Who a bearer credential is, or undefined when it is nobody. */
export type Identify = (credential: string) => Promise<Principal | undefined>;

/**
 * Credentials as stored: looked up by their hash, at each request. On PostgreSQL the lookups of
 * requests that arrive together go in one query (lookups.ts).
 */
export function identifyIn(db: Db, engine: Engine): Identify {
  const userOf = engine === 'postgres' ? batchedLookup((hashes) => findUserIdsByTokenHashes(db, hashes)) : (hash: string) => findUserIdByTokenHash(db, hash);
  const teamOf = engine === 'postgres' ? batchedLookup((hashes) => findTeamsByIngestKeyHashes(db, hashes)) : (hash: string) => findTeamByIngestKeyHash(db, hash);
  return async (credential) => {
    const hash = hashCredential(credential);
    switch (kindOf(credential)) {
      case 'api-token': {
        const holder = await userOf(hash);
        return holder === undefined ? undefined : { kind: 'user', ...holder };
      }
      case 'ingest-key': {
        const team = await teamOf(hash);
        return team === undefined ? undefined : { kind: 'ingest-key', team };
      }
      default:
        return undefined;
    }
  };
}
