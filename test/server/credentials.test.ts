import { createHash, timingSafeEqual } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createToken, revokeAllTokens, revokeToken, rotateIngestKey } from '../../server/admin/service';
import { hashCredential, newCredential, sameHash } from '../../server/auth/credentials';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

/**
 * API tokens and ingest keys (OWASP API2): at least 128 random bits, stored only as SHA-256
 * hashes, found through a unique index and compared in constant time, never logged; a revoked
 * token or a rotated-out ingest key is 401 from the next request on, and nothing else is.
 */

// Every timingSafeEqual of the server (which this file runs in-process) goes through this spy.
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  const spied = vi.fn(actual.timingSafeEqual);
  return { ...actual, default: { ...actual, timingSafeEqual: spied }, timingSafeEqual: spied };
});

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
/** The random part of a credential: what follows its kind prefix. */
const secretOf = (credential: string) => credential.slice(4);

describe('credentials as made, hashed and compared', () => {
  it('when 2 000 of each kind are made, then each carries 256 random bits after its kind prefix and none repeats', () => {
    for (const [kind, prefix] of [
      ['api-token', 'est_'],
      ['ingest-key', 'esk_'],
    ] as const) {
      const made = Array.from({ length: 2000 }, () => newCredential(kind));
      expect(new Set(made).size).toBe(made.length);
      for (const credential of made) {
        expect(credential.startsWith(prefix)).toBe(true);
        expect(secretOf(credential)).toMatch(/^[A-Za-z0-9_-]{43}$/); // 43 base64url digits = 258 bits ≥ 256 bits of randomness
        expect(Buffer.from(secretOf(credential), 'base64url')).toHaveLength(32);
      }
    }
  });

  it('when a credential is hashed, then the hash is its SHA-256 in hex and tells nothing of the text', () => {
    const token = newCredential('api-token');
    expect(hashCredential(token)).toBe(sha256(token));
    expect(hashCredential(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashCredential(token)).not.toContain(secretOf(token));
  });

  it('when hashes are compared, then only the same one matches, through timingSafeEqual, and another length is no error', () => {
    const hash = sha256('est_a');
    vi.mocked(timingSafeEqual).mockClear();
    expect(sameHash(hash, sha256('est_a'))).toBe(true);
    expect(sameHash(hash, sha256('est_b'))).toBe(false);
    expect(sameHash(hash, hash.slice(0, -1) + (hash.endsWith('0') ? '1' : '0'))).toBe(false); // differs in the last digit only
    expect(sameHash(hash, hash.toUpperCase())).toBe(false);
    expect(sameHash(hash, hash.slice(0, 63))).toBe(false);
    expect(sameHash(hash, '')).toBe(false);
    expect(vi.mocked(timingSafeEqual)).toHaveBeenCalledTimes(4);
  });

  it('when the server source is read, then no credential or credential hash is compared with ==, ===, != or !==, nor with equals()', () => {
    const root = fileURLToPath(new URL('../../server/', import.meta.url));
    const files = (readdirSync(root, { recursive: true }) as string[]).filter((file) => file.endsWith('.ts'));
    expect(files).toContain(join('auth', 'credentials.ts'));
    const secretish = /token|credential|hash|secret|ingest_?key/i;
    const harmless = /^(undefined|null|true|false)$/;
    const offences: string[] = [];
    for (const file of files) {
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .forEach((line, index) => {
          // Operands that are identifiers, properties or calls; a literal never holds a credential.
          for (const [, left, right] of line.matchAll(/([A-Za-z_$][\w$.]*(?:\([^()]*\))?)\s*[!=]==?\s*([A-Za-z_$][\w$.]*)/g)) {
            if (harmless.test(left) || harmless.test(right)) continue;
            if (secretish.test(left) || secretish.test(right)) offences.push(`${file}:${index + 1}: ${line.trim()}`);
          }
          if (/(token|credential|hash|secret|ingest_?key)\w*\.equals\(/i.test(line)) offences.push(`${file}:${index + 1}: ${line.trim()}`);
        });
    }
    expect(offences).toEqual([]);
  });
});

describe.each(engines)('credentials on %s', (engine) => {
  const server = useServer(engine);
  const status = async (path: string, credential: string | undefined, init: RequestInit = {}) => {
    const response = await fetch(server().baseUrl + path, {
      ...init,
      headers: { ...(credential !== undefined && { authorization: `Bearer ${credential}` }), ...(init.body !== undefined && { 'content-type': 'application/json' }) },
    });
    await response.arrayBuffer();
    if (response.status === 401) expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    return response.status;
  };
  const ingest = (team: TestTeam, key: string) =>
    status(`/api/teams/${team.id}/ingest`, key, { method: 'POST', body: JSON.stringify({ participant: 'credentials-test' }) });

  describe('storage', () => {
    it('when a token is issued and an ingest key rotated, then only their SHA-256 hashes are stored', async () => {
      const team = await server().newTeam();
      const db = server().storage.db;
      const issued = await createToken(db, team.email);
      const rotated = await rotateIngestKey(db, team.id);
      const tokens = await db.selectFrom('api_tokens').select('token_hash').where('user_id', '=', issued.user.id).execute();
      expect(tokens.map((row) => row.token_hash).sort()).toEqual([sha256(team.token), sha256(issued.token)].sort());
      const row = await db.selectFrom('teams').select('ingest_key_hash').where('id', '=', team.id).executeTakeFirstOrThrow();
      expect(row.ingest_key_hash).toBe(sha256(rotated.ingest_key));

      const tables = (await db.introspection.getTables()).map((table) => table.name).filter((name) => !name.startsWith('kysely_'));
      for (const table of tables) {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const rows = JSON.stringify(await (db as any).selectFrom(table).selectAll().execute());
        for (const credential of [team.token, issued.token, team.ingestKey, rotated.ingest_key]) {
          expect(rows, table).not.toContain(secretOf(credential));
        }
      }
    });

    it('when a second row would carry a stored hash, then the unique index the lookups go through refuses it', async () => {
      const [first, second] = [await server().newTeam(), await server().newTeam()];
      const db = server().storage.db;
      const token = await db.selectFrom('api_tokens').selectAll().where('token_hash', '=', sha256(first.token)).executeTakeFirstOrThrow();
      await expect(
        db.insertInto('api_tokens').values({ user_id: token.user_id, token_hash: token.token_hash, created_at: new Date().toISOString() }).execute(),
      ).rejects.toThrow(/unique|duplicate/i);
      await expect(
        db.updateTable('teams').set({ ingest_key_hash: sha256(first.ingestKey) }).where('id', '=', second.id).execute(),
      ).rejects.toThrow(/unique|duplicate/i);
    });
  });

  describe('comparison', () => {
    it.each([
      ['an API token', (team: TestTeam) => team.token, (team: TestTeam) => `/api/teams/${team.id}`],
      ['an ingest key', (team: TestTeam) => team.ingestKey, (team: TestTeam) => `/api/teams/${team.id}/config`],
    ])('when %s authenticates, then the stored hash is compared with the computed one by timingSafeEqual', async (_, credentialOf, pathOf) => {
      const team = await server().newTeam();
      vi.mocked(timingSafeEqual).mockClear();
      expect(await status(pathOf(team), credentialOf(team))).toBe(200);
      const expected = Buffer.from(sha256(credentialOf(team)));
      const calls = vi.mocked(timingSafeEqual).mock.calls.filter(([a, b]) => Buffer.from(a as Uint8Array).equals(expected) && Buffer.from(b as Uint8Array).equals(expected));
      expect(calls.length, 'timingSafeEqual(stored hash, computed hash)').toBeGreaterThanOrEqual(1);
    });
  });

  describe('revocation', () => {
    it('when a token is revoked, then it is 401 on the next request while the user’s other token and the team’s ingest key work', async () => {
      const team = await server().newTeam();
      const db = server().storage.db;
      const second = (await createToken(db, team.email)).token;
      expect(await status('/api/user', team.token)).toBe(200);
      expect(await status('/api/user', second)).toBe(200);

      const revoked = await revokeToken(db, team.token);
      expect(revoked).toMatchObject({ revoked: 1, user: { email: team.email } });
      expect(await status('/api/user', team.token)).toBe(401);
      expect(await status(`/api/teams/${team.id}`, team.token)).toBe(401);
      expect(await status('/api/health', team.token)).toBe(401);
      expect(await status('/api/user', second)).toBe(200);
      expect(await ingest(team, team.ingestKey)).toBe(200);

      expect(await revokeToken(db, team.token), 'revoking again changes nothing').toMatchObject({ revoked: 0 });
      expect(await status('/api/user', team.token)).toBe(401);
    });

    it('when all tokens of a user are revoked, then each is 401 and another user’s token and the team’s ingest key work', async () => {
      const [team, bystander] = [await server().newTeam(), await server().newTeam()];
      const db = server().storage.db;
      const tokens = [team.token, (await createToken(db, team.email)).token, (await createToken(db, team.email)).token];
      for (const token of tokens) expect(await status('/api/user', token)).toBe(200);

      expect(await revokeAllTokens(db, team.email)).toMatchObject({ revoked: 3 });
      for (const token of tokens) expect(await status('/api/user', token)).toBe(401);
      expect(await status('/api/user', bystander.token)).toBe(200);
      expect(await ingest(team, team.ingestKey)).toBe(200);

      const fresh = (await createToken(db, team.email)).token;
      expect(await status('/api/user', fresh), 'a token issued afterwards works').toBe(200);
    });

    it('when an ingest key is rotated, then the old key is 401 on the next request and the new one, the tokens and other teams’ keys work', async () => {
      const [team, bystander] = [await server().newTeam(), await server().newTeam()];
      const db = server().storage.db;
      expect(await ingest(team, team.ingestKey)).toBe(200);

      const first = await rotateIngestKey(db, team.id);
      expect(first.ingest_key).not.toBe(team.ingestKey);
      expect(first.team).toMatchObject({ id: team.id });
      expect(await ingest(team, team.ingestKey)).toBe(401);
      expect(await status(`/api/teams/${team.id}/config`, team.ingestKey)).toBe(401);
      expect(await ingest(team, first.ingest_key)).toBe(200);
      expect(await status(`/api/teams/${team.id}/config`, first.ingest_key)).toBe(200);
      expect(await status(`/api/teams/${team.id}`, team.token)).toBe(200);
      expect(await ingest(bystander, bystander.ingestKey)).toBe(200);

      const second = await rotateIngestKey(db, team.id);
      expect(await ingest(team, first.ingest_key), 'the key of the rotation before').toBe(401);
      expect(await ingest(team, second.ingest_key)).toBe(200);
    });
  });

  describe('the Authorization header', () => {
    let team: TestTeam;
    let other: TestTeam;
    beforeAll(async () => {
      team = await server().newTeam();
      other = await server().newTeam();
    });

    // Each carries (a part of) the team's valid token, so a lenient parser would let it through.
    const malformed: Array<[string, () => string]> = [
      ['the scheme alone', () => 'Bearer'],
      ['the token without a scheme', () => team.token],
      ['another scheme', () => `Basic ${Buffer.from(`${team.email}:${team.token}`).toString('base64')}`],
      ['a made-up scheme', () => `Token ${team.token}`],
      ['a colon after the scheme', () => `Bearer: ${team.token}`],
      ['a quoted token', () => `Bearer "${team.token}"`],
      ['two tokens', () => `Bearer ${team.token} ${team.token}`],
      ['two bearer credentials', () => `Bearer ${team.token}, Bearer ${other.token}`],
      ['a token with a trailing character', () => `Bearer ${team.token}.`],
      ['a token with base64 padding', () => `Bearer ${team.token}=`],
      ['a truncated token', () => `Bearer ${team.token.slice(0, -1)}`],
      ['a token in other case', () => `Bearer ${team.token.toUpperCase()}`],
      ['a token with another kind prefix', () => `Bearer esk_${secretOf(team.token)}`],
      ['an ingest key with the token prefix', () => `Bearer est_${secretOf(team.ingestKey)}`],
      ['no kind prefix', () => `Bearer ${secretOf(team.token)}`],
      ['an over-long token', () => `Bearer ${team.token}${'A'.repeat(200)}`],
      ['an empty header', () => ''],
    ];

    it.each(malformed)('when it is %s, then the user, the config, ingest and the health check are 401', async (_, header) => {
      const value = header();
      const call = async (path: string, init: RequestInit = {}) => {
        const response = await fetch(server().baseUrl + path, { ...init, headers: { authorization: value, 'content-type': 'application/json' } });
        await response.arrayBuffer();
        return response.status;
      };
      expect(await call('/api/user')).toBe(401);
      expect(await call(`/api/teams/${team.id}/config`)).toBe(401);
      expect(await call(`/api/teams/${team.id}/ingest`, { method: 'POST', body: JSON.stringify({ participant: 'malformed' }) })).toBe(401);
      expect(await call('/api/health')).toBe(401);
    });

    it('when the scheme is written in lower case, then the token is accepted (schemes are case-insensitive)', async () => {
      const response = await fetch(`${server().baseUrl}/api/user`, { headers: { authorization: `bearer ${team.token}` } });
      expect(response.status).toBe(200);
    });
  });

  describe('the request log', () => {
    const lines: string[] = [];
    // A second app on the same storage whose logger writes into `lines`.
    const app = useServer(() => ({ beside: server(), app: { logger: pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) }) } }));

    it('when valid, revoked, rotated-out and malformed credentials are sent, then no credential appears in the log', async () => {
      const team = await server().newTeam();
      const db = server().storage.db;
      const revoked = (await createToken(db, team.email)).token;
      await revokeToken(db, revoked);
      const rotatedOut = team.ingestKey;
      const current = (await rotateIngestKey(db, team.id)).ingest_key;
      const calls = [
        { path: '/api/user', header: `Bearer ${team.token}`, status: 200 },
        { path: `/api/teams/${team.id}/config`, header: `Bearer ${current}`, status: 200 },
        { path: '/api/user', header: `Bearer ${revoked}`, status: 401 },
        { path: `/api/teams/${team.id}/config`, header: `Bearer ${rotatedOut}`, status: 401 },
        { path: '/api/user', header: `Bearer: ${team.token}`, status: 401 },
        { path: '/api/user', header: `Bearer ${current}`, status: 403 },
        { path: `/api/teams/${team.id}/ingest`, header: `Bearer ${current}`, status: 400, body: '{"participant":' },
      ];
      for (const call of calls) {
        const response = await fetch(app().baseUrl + call.path, {
          method: call.body === undefined ? 'GET' : 'POST',
          headers: { authorization: call.header, 'content-type': 'application/json' },
          body: call.body,
        });
        expect(response.status).toBe(call.status);
        await response.arrayBuffer();
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      const log = lines.join('');
      expect(log.length).toBeGreaterThan(0);
      for (const credential of [team.token, revoked, rotatedOut, current]) expect(log).not.toContain(secretOf(credential));
    });
  });
});
