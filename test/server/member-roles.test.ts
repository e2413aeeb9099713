import { beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from 'experimentation-api';
import { createToken, setRole } from '../../server/admin/service';
import { MEMBER_ROLES, reaches, type MemberRole } from '../../domain/member-roles';
import { operations, pathExamples, pathOf, type ContractOperation } from '../support/contract-operations';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { bodyOrFirstMessage } from '../support/event-stream';
import type { TestTeam } from '../support/team';

/**
 * Driven by the contract: every operation's `x-role` (generated/openapi.json) is tried with each
 * role below it — a viewer's and an editor's token, and an admin's read-only token — and must
 * be refused with 403 naming the role it needs, changing nothing; the least role it names must
 * not be refused. An operation added to the contract is tested here by its x-role alone.
 */

type Caller = 'viewer' | 'editor' | 'read-only admin';
const ACTS_AS: Record<Caller, MemberRole> = { viewer: 'viewer', editor: 'editor', 'read-only admin': 'viewer' };
const CALLERS = Object.keys(ACTS_AS) as Caller[];

const roled = operations.filter((op) => op.role !== undefined);
const refusals = roled.flatMap((op) => CALLERS.filter((caller) => !reaches(ACTS_AS[caller], op.role!)).map((caller) => ({ op, caller, label: `${op.method} ${op.template}` })));

describe('the contract states a role', () => {
  it('when it is read, then every operation on a team has an x-role, stated in its description too, and no other operation has one', () => {
    for (const op of operations) {
      if (op.teamScoped) {
        expect(MEMBER_ROLES, op.operationId).toContain(op.role);
        expect(op.description, op.operationId).toMatch(new RegExp(`Role: (any member|\`${op.role}\`)`));
        expect(op.documented.has(403), `${op.operationId} documents 403`).toBe(true);
      } else expect(op.role, op.operationId).toBeUndefined();
    }
  });

  it('when the refusals are listed, then each caller is refused every operation above the role it acts with', () => {
    expect(roled.length).toBeGreaterThan(30);
    for (const caller of CALLERS) {
      const above = roled.filter((op) => MEMBER_ROLES.indexOf(op.role!) > MEMBER_ROLES.indexOf(ACTS_AS[caller]));
      expect(refusals.filter((refusal) => refusal.caller === caller).map((refusal) => refusal.op), caller).toEqual(above);
    }
    expect(refusals.filter((refusal) => refusal.caller === 'viewer').length).toBeGreaterThan(20);
  });
});

describe.each(engines)('roles on %s', (engine) => {
  const server = useServer(engine);
  let team: TestTeam;
  const tokens = {} as Record<Caller | 'admin', string>;

  async function call(op: ContractOperation, token: string, body = op.bodyExample): Promise<{ status: number; text: string }> {
    const response = await fetch(server().baseUrl + pathOf(op, team.id), {
      method: op.method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, text: await bodyOrFirstMessage(response) };
  }

  /** What the team holds, as its admin reads it. */
  async function snapshot(): Promise<unknown> {
    const read = async (path: string) => (await (await fetch(server().baseUrl + path, { headers: { authorization: `Bearer ${tokens.admin}` } })).json()) as unknown;
    return Promise.all([
      read(`/api/teams/${team.id}?include=events,experiments.variants,participants,features`),
      read(`/api/teams/${team.id}/config`),
      read(`/api/teams/${team.id}/participants/${pathExamples.participant}`),
    ]);
  }

  beforeAll(async () => {
    team = await server().newTeam('Roles');
    const db = server().storage.db;
    const path = { team: team.id };
    const experiment = { ...path, experiment: pathExamples.experiment };
    const created = [
      await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: pathExamples.event } }),
      await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: pathExamples.experiment, event: pathExamples.event } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'control', control: true, traffic: 50 } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: pathExamples.variant, traffic: 50 } }),
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: experiment } }),
      await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: pathExamples.feature, enabled: true } }),
      await team.ingest.POST('/api/teams/{team}/ingest', { params: { path }, body: { participant: pathExamples.participant, event: pathExamples.event } }),
    ];
    for (const { response } of created) expect(response.status, response.url).toBe(200);
    tokens.admin = team.token;
    for (const role of ['viewer', 'editor'] as const) {
      const email = `${role}-${team.id}@example.com`;
      await setRole(db, team.id, email, role);
      tokens[role] = (await createToken(db, email)).token;
    }
    tokens['read-only admin'] = (await createToken(db, team.email, { readOnly: true })).token;
  });

  it.each(refusals)("when $label is called with a $caller's token, then 403 naming the role it needs, and nothing changes", async ({ op, caller }) => {
    const before = await snapshot();
    const { status, text } = await call(op, tokens[caller]);
    expect(status, text).toBe(403);
    expect(JSON.parse(text)).toMatchObject({ status: 403, type: 'urn:experimentation:problem:role-required', detail: expect.stringContaining(`needs the ${op.role} role`) });
    expect(await snapshot()).toEqual(before);
  });

  // Last: these may change the team, which no refusal above may see.
  it.each(roled.map((op) => ({ op, label: `${op.method} ${op.template}` })))('when $label is called with its own role, then it is not refused', async ({ op }) => {
    const { status, text } = await call(op, tokens[op.role === 'viewer' ? 'viewer' : op.role === 'editor' ? 'editor' : 'admin']);
    expect(status, text).not.toBe(403);
  });

  it("when the teams are listed, then each carries the caller's role, a read-only token's as viewer", async () => {
    const listed = async (token: string) => (await createApiClient(server().baseUrl, token).GET('/api/teams', {})).data?.data.map((t) => [t.id, t.role]);
    expect(await listed(tokens.editor)).toEqual([[team.id, 'editor']]);
    expect(await listed(tokens['read-only admin'])).toContainEqual([team.id, 'viewer']);
    expect(await listed(tokens.admin)).toContainEqual([team.id, 'admin']);
  });

  it("when an admin sets a viewer's role to editor, then the viewer's next change is accepted", async () => {
    const db = server().storage.db;
    const email = `promoted-${team.id}@example.com`;
    await setRole(db, team.id, email, 'viewer');
    const client = createApiClient(server().baseUrl, (await createToken(db, email)).token);
    const create = () => client.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'promoted' } });
    expect((await create()).response.status).toBe(403);
    expect(await setRole(db, team.id, email, 'editor')).toMatchObject({ role: 'editor', previous: 'viewer' });
    expect((await create()).response.status).toBe(200);
  });
});
