import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { components } from 'experimentation-api';
import { createToken, revokeToken, rotateIngestKey, setQuota, setRole } from '../../server/admin/service';
import { sweepAuditLog } from '../../server/audit/service';
import { setClock } from '../../server/storage/values';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { ingestOk } from '../support/fixtures';
import type { TestTeam } from '../support/team';

type AuditEntry = components['schemas']['AuditEntry'];
type Query = { cursor?: string; limit?: number; resource_type?: AuditEntry['resource_type']; resource_key?: string; actor?: string; since?: string; until?: string };

interface Expected {
  resource_type: AuditEntry['resource_type'];
  resource_key: string;
  action: AuditEntry['action'];
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** Every kind of change through the API, in an order that makes each possible, and the one entry each must write. */
const CHANGES: Array<{ name: string; run: (team: TestTeam) => Promise<{ response: Response }>; expected: Expected }> = [
  { name: 'event created', run: (t) => t.api.POST('/api/teams/{team}/events', { params: { path: { team: t.id } }, body: { key: 'goal' } }), expected: { resource_type: 'event', resource_key: 'goal', action: 'created', before: null } },
  { name: 'event updated', run: (t) => t.api.PUT('/api/teams/{team}/events/{event}', { params: { path: { team: t.id, event: 'goal' } }, body: { description: 'Bought' } }), expected: { resource_type: 'event', resource_key: 'goal', action: 'updated', before: { description: null }, after: { description: 'Bought' } } },
  { name: 'event created (to delete)', run: (t) => t.api.POST('/api/teams/{team}/events', { params: { path: { team: t.id } }, body: { key: 'spare' } }), expected: { resource_type: 'event', resource_key: 'spare', action: 'created' } },
  { name: 'event deleted', run: (t) => t.api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { team: t.id, event: 'spare' } } }), expected: { resource_type: 'event', resource_key: 'spare', action: 'deleted', after: null } },
  { name: 'experiment created', run: (t) => t.api.POST('/api/teams/{team}/experiments', { params: { path: { team: t.id } }, body: { key: 'exp', event: 'goal' } }), expected: { resource_type: 'experiment', resource_key: 'exp', action: 'created', before: null } },
  { name: 'experiment updated', run: (t) => t.api.PUT('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: t.id, experiment: 'exp' } }, body: { description: 'Checkout' } }), expected: { resource_type: 'experiment', resource_key: 'exp', action: 'updated', before: { description: null }, after: { description: 'Checkout' } } },
  { name: 'variant created', run: (t) => t.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team: t.id, experiment: 'exp' } }, body: { key: 'control', control: true } }), expected: { resource_type: 'variant', resource_key: 'exp/control', action: 'created', before: null } },
  { name: 'variant created (second)', run: (t) => t.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team: t.id, experiment: 'exp' } }, body: { key: 'treatment' } }), expected: { resource_type: 'variant', resource_key: 'exp/treatment', action: 'created' } },
  { name: 'variant updated', run: (t) => t.api.PUT('/api/teams/{team}/experiments/{experiment}/variants/{variant}', { params: { path: { team: t.id, experiment: 'exp', variant: 'treatment' } }, body: { description: 'Green' } }), expected: { resource_type: 'variant', resource_key: 'exp/treatment', action: 'updated', before: { description: null }, after: { description: 'Green' } } },
  { name: 'variant created (to delete)', run: (t) => t.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { team: t.id, experiment: 'exp' } }, body: { key: 'extra' } }), expected: { resource_type: 'variant', resource_key: 'exp/extra', action: 'created' } },
  { name: 'variant deleted', run: (t) => t.api.DELETE('/api/teams/{team}/experiments/{experiment}/variants/{variant}', { params: { path: { team: t.id, experiment: 'exp', variant: 'extra' } } }), expected: { resource_type: 'variant', resource_key: 'exp/extra', action: 'deleted', after: null } },
  { name: 'experiment started', run: (t) => t.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { team: t.id, experiment: 'exp' } } }), expected: { resource_type: 'experiment', resource_key: 'exp', action: 'started' } },
  { name: 'flag created', run: (t) => t.api.POST('/api/teams/{team}/features', { params: { path: { team: t.id } }, body: { key: 'flag', type: 'boolean' } }), expected: { resource_type: 'flag', resource_key: 'flag', action: 'created', before: null } },
  { name: 'flag updated', run: (t) => t.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: t.id, feature: 'flag' } }, body: { enabled: true } }), expected: { resource_type: 'flag', resource_key: 'flag', action: 'updated', before: { enabled: false }, after: { enabled: true } } },
  { name: 'flag deleted', run: (t) => t.api.DELETE('/api/teams/{team}/features/{feature}', { params: { path: { team: t.id, feature: 'flag' } } }), expected: { resource_type: 'flag', resource_key: 'flag', action: 'deleted', after: null } },
  { name: 'participant created', run: (t) => t.api.POST('/api/teams/{team}/participants', { params: { path: { team: t.id } }, body: { key: 'ana' } }), expected: { resource_type: 'participant', resource_key: 'ana', action: 'created', before: null } },
  { name: 'participant updated', run: (t) => t.api.PUT('/api/teams/{team}/participants/{participant}', { params: { path: { team: t.id, participant: 'ana' } }, body: { notes: 'VIP' } }), expected: { resource_type: 'participant', resource_key: 'ana', action: 'updated', before: { notes: null }, after: { notes: 'VIP' } } },
  { name: 'participant unenrolled', run: (t) => t.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path: { team: t.id, participant: 'bo', experiment: 'exp' } } }), expected: { resource_type: 'enrolment', resource_key: 'bo/exp', action: 'deleted', after: null } },
  { name: 'participant deleted', run: (t) => t.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { team: t.id, participant: 'ana' } } }), expected: { resource_type: 'participant', resource_key: 'ana', action: 'deleted', after: null } },
  { name: 'experiment stopped', run: (t) => t.api.POST('/api/teams/{team}/experiments/{experiment}/stop', { params: { path: { team: t.id, experiment: 'exp' } } }), expected: { resource_type: 'experiment', resource_key: 'exp', action: 'stopped' } },
  { name: 'experiment deleted', run: (t) => t.api.DELETE('/api/teams/{team}/experiments/{experiment}', { params: { path: { team: t.id, experiment: 'exp' } } }), expected: { resource_type: 'experiment', resource_key: 'exp', action: 'deleted', after: null } },
];

describe.each(engines)('the audit log on %s', (engine) => {
  const server = useServer(engine);
  let team: TestTeam;

  async function read(query: Query = {}, as: TestTeam = team): Promise<{ data: AuditEntry[]; next: string | null }> {
    const { data, error, response } = await as.api.GET('/api/teams/{team}/audit-log', { params: { path: { team: as.id }, query } });
    expect(response.status, JSON.stringify(error)).toBe(200);
    return { data: data!.data, next: data!.meta.next_cursor };
  }

  async function everything(query: Query = {}, as: TestTeam = team): Promise<AuditEntry[]> {
    return (await read({ ...query, limit: 100 }, as)).data;
  }

  beforeAll(async () => {
    team = await server().newTeam('Audited');
  });

  it('when every kind of change is made through the API, then each writes exactly one entry, by the user, with what changed', async () => {
    const user = (await team.api.GET('/api/user')).data!.data;
    for (const change of CHANGES) {
      // The enrolment to withdraw comes from an ingest, which writes no entry of its own.
      if (change.name === 'participant unenrolled') await ingestOk(team, { participant: 'bo' });
      const [newest] = (await read({ limit: 1 })).data;
      const { response } = await change.run(team);
      expect(response.status, change.name).toBe(200);

      const written = (await everything()).filter((entry) => Number(entry.id) > Number(newest!.id));
      expect(written, change.name).toHaveLength(1);
      const entry = written[0]!;
      expect(entry, change.name).toMatchObject(change.expected);
      expect(entry.actor, change.name).toEqual({ type: 'user', user_id: user.id, email: team.email, reason: null });
      expect(entry.request_id, change.name).toMatch(/^[0-9a-f-]{36}$/);
      if (change.expected.action === 'created') expect(entry.after, change.name).toMatchObject({ key: change.expected.resource_key.split('/').at(-1) });
    }
  });

  it('when an update changes several fields, then before and after hold only those fields', async () => {
    const t = await server().newTeam();
    await t.api.POST('/api/teams/{team}/features', { params: { path: { team: t.id } }, body: { key: 'banner', value: 'blue' } });
    await t.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: t.id, feature: 'banner' } }, body: { value: 'green', enabled: true, description: null } });
    const [entry] = (await read({ resource_type: 'flag', limit: 1 }, t)).data;
    expect(entry).toMatchObject({ action: 'updated', before: { value: 'blue', enabled: false }, after: { value: 'green', enabled: true } });
    expect(Object.keys(entry!.after!).sort()).toEqual(['enabled', 'value']);
  });

  it('when changes are refused or fail, then nothing and no entry is stored — and when the entry cannot be written, the change is rolled back', async () => {
    const t = await server().newTeam();
    const path = { team: t.id };
    await t.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } });
    await t.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'goal' } });
    const before = await everything({}, t);

    const refused = [
      await t.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } }), // 409 duplicate, inside the transaction
      await t.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } }), // 409 no variants
      await t.api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { ...path, event: 'goal' } } }), // 409 goal of exp
      await t.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { ...path, feature: 'none' } }, body: { enabled: true } }), // 404
    ];
    expect(refused.map((r) => r.response.status)).toEqual([409, 409, 409, 404]);
    expect(await everything({}, t)).toEqual(before);

    // The entry's insert fails: the flag it describes must not be stored either.
    await refuseEntriesAbout(server().storage.db, engine, 'doomed');
    const failed = await t.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'doomed' } });
    expect(failed.response.status).toBe(500);
    expect((await t.api.GET('/api/teams/{team}/features/{feature}', { params: { path: { ...path, feature: 'doomed' } } })).response.status).toBe(404);
    expect(await everything({}, t)).toEqual(before);
  });

  it('when ingest creates participants, enrols them and records conversions, then it writes no entry', async () => {
    const t = await server().newTeam();
    const path = { team: t.id };
    await t.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } });
    await t.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'goal' } });
    for (const key of ['control', 'treatment']) await t.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: { key, control: key === 'control' } });
    await t.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } });
    const before = await everything({}, t);
    for (let i = 0; i < 5; i++) await ingestOk(t, { participant: `visitor-${i}`, event: 'goal' });
    const batch = await t.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items: [{ participant: 'visitor-9', event: 'goal' }] } });
    expect(batch.response.status).toBe(200);
    expect((await t.api.GET('/api/teams/{team}/participants', { params: { path } })).data!.meta.total).toBe(6);
    expect(await everything({}, t)).toEqual(before);
  });

  it('when the admin CLI changes a team, then its entries name the admin CLI, and credentials are described, never shown', async () => {
    const t = await server().newTeam();
    const db = server().storage.db;
    const created = await everything({}, t);
    expect(created.map((e) => [e.resource_type, e.action]).reverse()).toEqual([
      ['team', 'created'],
      ['member', 'created'],
      ['ingest-key', 'issued'],
      ['api-token', 'issued'],
    ]);
    const { token } = await createToken(db, t.email, { readOnly: true });
    await setRole(db, t.id, 'bea@example.com', 'editor');
    await setRole(db, t.id, 'bea@example.com', 'viewer');
    await setQuota(db, t.id, 1000);
    await rotateIngestKey(db, t.id);
    await revokeToken(db, token);

    const entries = (await everything({ actor: 'admin-cli' }, t)).slice(0, 6).reverse();
    expect(entries.map((e) => ({ type: e.resource_type, key: e.resource_key, action: e.action, before: e.before, after: e.after }))).toEqual([
      { type: 'api-token', key: t.email, action: 'issued', before: null, after: { user: t.email, read_only: true } },
      { type: 'member', key: 'bea@example.com', action: 'created', before: null, after: { email: 'bea@example.com', role: 'editor' } },
      { type: 'member', key: 'bea@example.com', action: 'updated', before: { role: 'editor' }, after: { role: 'viewer' } },
      { type: 'team', key: String(t.id), action: 'updated', before: { ingest_limit: null }, after: { ingest_limit: 1000 } },
      { type: 'ingest-key', key: String(t.id), action: 'issued', before: null, after: { team_id: t.id, replaces_previous: true } },
      { type: 'api-token', key: t.email, action: 'revoked', before: { user: t.email, tokens: 1 }, after: null },
    ]);
    for (const entry of entries) {
      expect(entry.actor).toEqual({ type: 'admin-cli', user_id: null, email: null, reason: null });
      expect(entry.request_id).toBeNull();
    }
    const stored = JSON.stringify(await everything({}, t));
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(t.token);
    expect(stored).not.toContain(t.ingestKey);
  });

  it('when read in pages, then the cursor walks every entry once, newest first, and entries written meanwhile shift nothing', async () => {
    const all = await everything();
    expect(all.length).toBeGreaterThan(CHANGES.length);
    const ids = all.map((entry) => Number(entry.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));

    const walked: AuditEntry[] = [];
    let cursor: string | undefined;
    for (let pages = 0; ; pages++) {
      const page = await read({ limit: 4, ...(cursor && { cursor }) });
      walked.push(...page.data);
      if (pages === 0) await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'meanwhile' } });
      if (page.next === null) break;
      cursor = page.next;
    }
    expect(walked).toEqual(all);
    const { data } = await team.api.GET('/api/teams/{team}/audit-log', { params: { path: { team: team.id }, query: { limit: 2 } } });
    expect(data!.links.next).toBe(`/api/teams/${team.id}/audit-log?limit=2&cursor=${data!.meta.next_cursor}`);
  });

  it('when filtered by resource type, key, actor and time range, then only the matching entries come, and the filters combine', async () => {
    const all = await everything();
    const expectFilter = async (query: Query, keep: (entry: AuditEntry) => boolean) => {
      const expected = all.filter(keep);
      expect(expected.length, JSON.stringify(query)).toBeGreaterThan(0);
      expect(await everything(query), JSON.stringify(query)).toEqual(expected);
    };
    await expectFilter({ resource_type: 'variant' }, (e) => e.resource_type === 'variant');
    await expectFilter({ resource_key: 'exp/treatment' }, (e) => e.resource_key === 'exp/treatment');
    await expectFilter({ resource_type: 'experiment', resource_key: 'exp' }, (e) => e.resource_type === 'experiment' && e.resource_key === 'exp');
    await expectFilter({ actor: team.email }, (e) => e.actor.email === team.email);
    await expectFilter({ actor: 'admin-cli' }, (e) => e.actor.type === 'admin-cli');
    const middle = all[Math.floor(all.length / 2)]!.at;
    await expectFilter({ since: middle }, (e) => e.at >= middle);
    await expectFilter({ until: middle }, (e) => e.at < middle);
    await expectFilter({ since: all.at(-1)!.at, until: new Date(Date.parse(middle) + 1).toISOString(), resource_type: 'variant' }, (e) => e.at <= middle && e.resource_type === 'variant');
    expect(await everything({ actor: 'nobody@example.com' })).toEqual([]);
  });

  it('when another team reads, or the query is malformed, then it gets nothing of this team', async () => {
    const other = await server().newTeam();
    const foreign = await other.api.GET('/api/teams/{team}/audit-log', { params: { path: { team: team.id } } });
    expect(foreign.response.status).toBe(404);
    expect((await read({}, other)).data.every((entry) => entry.resource_type !== 'experiment')).toBe(true);
    for (const query of ['limit=0', 'limit=101', 'cursor=abc', 'resource_type=widget', 'since=yesterday']) {
      const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/audit-log?${query}`, { headers: { authorization: `Bearer ${team.token}` } });
      expect(response.status, query).toBe(400);
      const problem = (await response.json()) as { errors: Array<{ path: string }> };
      expect(problem.errors[0]!.path, query).toBe(`/query/${query.split('=')[0]}`);
    }
  });

  it('when the retention sweep runs, then entries older than the retention are deleted and younger ones kept', async () => {
    const t = await server().newTeam();
    const db = server().storage.db;
    const count = async () => (await everything({}, t)).length;
    const kept = await count();
    const written = Date.now();
    const restore = setClock(() => new Date(written + 89 * 86_400_000));
    try {
      await sweepAuditLog(db, 90);
      expect(await count()).toBe(kept);
    } finally {
      restore();
    }
    const later = setClock(() => new Date(written + 91 * 86_400_000));
    try {
      expect(await sweepAuditLog(db, 90)).toBeGreaterThanOrEqual(kept);
      expect(await count()).toBe(0);
    } finally {
      later();
    }
  });
});

/** A trigger that makes the insert of an audit entry about `key` fail, as a full disk or a lost connection would. */
async function refuseEntriesAbout(db: import('../../server/storage/database').Db, engine: string, key: string): Promise<void> {
  if (engine === 'sqlite') {
    await sql.raw(`create trigger refuse_${key} before insert on audit_log when new.resource_key = '${key}' begin select raise(abort, 'refused'); end`).execute(db);
    return;
  }
  await sql.raw(`create or replace function refuse_${key}() returns trigger language plpgsql as $$ begin if new.resource_key = '${key}' then raise exception 'refused'; end if; return new; end $$`).execute(db);
  await sql.raw(`create trigger refuse_${key} before insert on audit_log for each row execute function refuse_${key}()`).execute(db);
}
