import { createApiClient } from 'experimentation-api';
import { createTeam } from '../../server/admin/service';
import type { Storage } from '../../server/storage/database';
import { openStorageAt, type StorageEnv } from './storage';

export type Client = ReturnType<typeof createApiClient>;

/** A team a test made, with its own user: their credentials, and typed clients against the server it was made beside. */
export interface TestTeam {
  id: number;
  /** The user's API token. */
  token: string;
  ingestKey: string;
  email: string;
  /** Client with the team's user's API token. */
  api: Client;
  /** Client with the team's ingest key. */
  ingest: Client;
}

/** Makes a team (user, token, ingest key) in `storage`, with clients against `baseUrl`. */
export async function createTestTeam(storage: Storage, baseUrl: string, name: string, email: string): Promise<TestTeam> {
  const created = await createTeam(storage.db, { name, email });
  return { id: created.team.id, token: created.token, ingestKey: created.ingest_key, email, ...clientsOf(baseUrl, { token: created.token, ingestKey: created.ingest_key }) };
}

/** A new team in the storage `storageEnv` names, written from this process, with clients against the server at `baseUrl` (a child process on that storage). */
export async function createTeamAt(baseUrl: string, storageEnv: StorageEnv, name = `Team ${Date.now()}`): Promise<TestTeam> {
  const storage = await openStorageAt(storageEnv);
  try {
    return await createTestTeam(storage, baseUrl, name, `process-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`);
  } finally {
    await storage.close();
  }
}

/** Typed clients with the team's API token and ingest key against one server (another process on its storage, a restarted one, …). */
export function clientsOf(baseUrl: string, team: Pick<TestTeam, 'token' | 'ingestKey'>): { api: Client; ingest: Client } {
  return { api: createApiClient(baseUrl, team.token), ingest: createApiClient(baseUrl, team.ingestKey) };
}
