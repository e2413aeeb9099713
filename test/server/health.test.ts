import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { engines } from '../support/engines';
import { expectProblem } from '../support/problems';
import { POSTGRES_ADMIN_URL } from '../support/postgres';
import { startServer, useServer } from '../support/server';

describe.each(engines)('health on %s', (engine) => {
  const server = useServer(engine);

  describe('GET /api/health', () => {
    it('when no credential is sent, then 200 with status ok', async () => {
      // Arrange
      const anonymous = createApiClient(server().baseUrl);
      // Act
      const { data, response } = await anonymous.GET('/api/health');
      // Assert
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(data).toEqual({ data: { status: 'ok' } });
    });

    it('when a valid API token is sent, then 200', async () => {
      const team = await server().newTeam();
      const { data, response } = await team.api.GET('/api/health');
      expect(response.status).toBe(200);
      expect(data).toEqual({ data: { status: 'ok' } });
    });

    it('when a valid ingest key is sent, then 200', async () => {
      const team = await server().newTeam();
      const { data, response } = await team.ingest.GET('/api/health');
      expect(response.status).toBe(200);
      expect(data).toEqual({ data: { status: 'ok' } });
    });

    it.each([
      ['an unknown API token', 'Bearer est_unknownunknownunknownunknown'],
      ['an unknown ingest key', 'Bearer esk_unknownunknownunknownunknown'],
      ['a credential of no known kind', 'Bearer something'],
      ['a non-bearer scheme', 'Basic dXNlcjpwYXNz'],
    ])('when %s is sent, then 401 problem', async (_what, authorization) => {
      const response = await fetch(`${server().baseUrl}/api/health`, { headers: { authorization } });
      expectProblem(response, await response.json(), 401, 'Unauthorized');
    });

    it('when a revoked token is sent, then 401 problem', async () => {
      // Arrange: revoke every token of the team's user
      const team = await server().newTeam();
      const user = await server().storage.db.selectFrom('users').select('id').where('email', '=', team.email).executeTakeFirstOrThrow();
      await server().storage.db.updateTable('api_tokens').set({ revoked_at: new Date().toISOString() }).where('user_id', '=', user.id).execute();
      // Act
      const { error, response } = await team.api.GET('/api/health');
      // Assert
      expectProblem(response, error, 401, 'Unauthorized');
    });

    it.each(['HEAD', 'OPTIONS', 'POST'])('when the method is %s, then 405 with Allow: GET', async (method) => {
      const response = await fetch(`${server().baseUrl}/api/health`, { method });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('GET');
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      if (method !== 'HEAD') expectProblem(response, await response.json(), 405, 'Method Not Allowed');
    });

    it('when an unknown query parameter is sent, then 400 names it', async () => {
      const response = await fetch(`${server().baseUrl}/api/health?verbose=1`);
      expectProblem(response, await response.json(), 400, 'Bad Request', ['/query/verbose']);
    });
  });
});

describe.each(engines)('health on %s with its storage gone', (engine) => {
  it('when storage does not answer, then 500 problem', async () => {
    // Arrange: a server of its own whose storage is closed under it
    const started = await startServer(engine);
    try {
      await started.storage.close();
      // Act
      const response = await fetch(`${started.baseUrl}/api/health`);
      // Assert
      expectProblem(response, await response.json(), 500, 'Internal Server Error');
    } finally {
      // close() closes the storage again; tolerate that it is already closed.
      await started.close().catch(() => {});
    }
  });

  it.runIf(engine === 'postgres')('when PostgreSQL drops the idle connections, then the service survives and health answers 200', async () => {
    // Arrange: a server of its own with an idle pooled connection, which the database then terminates (restart, failover, idle timeout)
    const started = await startServer(engine);
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    const crashes: unknown[] = [];
    const onCrash = (error: unknown) => crashes.push(error);
    process.on('uncaughtException', onCrash);
    try {
      expect((await fetch(`${started.baseUrl}/api/health`)).status).toBe(200);
      const database = new URL(started.storageEnv.DATABASE_URL).pathname.slice(1);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Act
      const response = await fetch(`${started.baseUrl}/api/health`);
      // Assert: the pool replaced the dead connection
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ data: { status: 'ok' } });
      expect(crashes, 'an error nobody handles would end the process').toEqual([]);
    } finally {
      process.off('uncaughtException', onCrash);
      await admin.end();
      await started.close().catch(() => {});
    }
  });
});
