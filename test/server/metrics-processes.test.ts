// Count and value metrics written by two server processes on one PostgreSQL database: after
// concurrent ingests for the same participants through both and erasures meanwhile, Σy and Σy²
// of every variant × event equal what the stored conversion rows give (each participant's capped
// total), and so does the daily roll-up.
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { inParallel } from '../support/fixtures';
import { ingestOnce, startChild, stopChild, type ChildServer } from '../support/process';
import { startServer, type TestServer } from '../support/server';

const MICRO = 1_000_000n;

describe.runIf(engines.includes('postgres'))('count and value metrics from two server processes on one postgres database', () => {
  let server: TestServer | undefined;
  const children: ChildServer[] = [];

  afterAll(async () => {
    for (const child of children) await stopChild(child);
    await server?.close();
  });

  /** Σy and Σy² per `variant:event`, in micro-units, from the stored rows: a read that sums the counters' way is not asked. */
  async function fromRawRows(teamId: number): Promise<Map<string, { y: bigint; y2: bigint }>> {
    const rows = await server!.storage.db
      .selectFrom('conversions as c')
      .innerJoin('enrolments as e', (join) => join.onRef('e.participant_id', '=', 'c.participant_id').onRef('e.experiment_id', '=', 'c.experiment_id'))
      .innerJoin('variants as v', 'v.id', 'e.variant_id')
      .innerJoin('events as ev', 'ev.id', 'c.event_id')
      .select(['v.key as variant', 'ev.key as event', 'ev.type', 'ev.cap', 'c.count', 'c.value'])
      .where('c.team_id', '=', teamId)
      .execute();
    const sums = new Map<string, { y: bigint; y2: bigint }>();
    for (const row of rows) {
      const raw = row.type === 'value' ? BigInt(String(row.value)) : BigInt(row.count) * MICRO;
      const cap = row.cap === null ? null : BigInt(Math.round(row.cap * 1e6));
      const y = cap !== null && raw > cap ? cap : raw;
      const sum = sums.get(`${row.variant}:${row.event}`) ?? { y: 0n, y2: 0n };
      sums.set(`${row.variant}:${row.event}`, { y: sum.y + y, y2: sum.y2 + y * y });
    }
    return sums;
  }

  async function counters(table: 'variant_event_counts' | 'daily_variant_event_counts', teamId: number): Promise<Map<string, { y: bigint; y2: bigint }>> {
    const rows = await server!.storage.db
      // The roll-up has the counters' columns, per day: read the same way.
      .selectFrom(`${table as 'variant_event_counts'} as c`)
      .innerJoin('variants as v', 'v.id', 'c.variant_id')
      .innerJoin('events as ev', 'ev.id', 'c.event_id')
      .select(['v.key as variant', 'ev.key as event', 'c.sum_y', 'c.sum_y2'])
      .where('c.team_id', '=', teamId)
      .execute();
    const sums = new Map<string, { y: bigint; y2: bigint }>();
    for (const row of rows) {
      const sum = sums.get(`${row.variant}:${row.event}`) ?? { y: 0n, y2: 0n };
      sums.set(`${row.variant}:${row.event}`, { y: sum.y + BigInt(String(row.sum_y)), y2: sum.y2 + BigInt(String(row.sum_y2)) });
    }
    // A counter every participant left holds 0; the raw rows have no entry for it.
    return new Map([...sums].filter(([, s]) => s.y !== 0n || s.y2 !== 0n));
  }

  it('when both processes take concurrent counts and values for the same participants while some are erased, then Σy and Σy² equal the raw rows, in the counters and the daily roll-up', async () => {
    // Arrange: a value event with a cap, a count event with a cap, a running experiment
    server = await startServer('postgres');
    const team = await server.newTeam();
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase' } });
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'revenue', type: 'value', cap: 120.5 } });
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'views', type: 'count', cap: 4 } });
    await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'exp', event: 'purchase' } });
    for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'exp' } }, body: variant });
    }
    await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'exp' } } });
    children.push(await startChild(server.storageEnv), await startChild(server.storageEnv));
    // 30 participants, each written by both processes in turn: values with two decimals, some negative, some above the cap
    const ingests = Array.from({ length: 480 }, (_, i) => {
      const participant = `p${i % 30}`;
      if (i % 3 === 0) return { participant, event: 'views' };
      return { participant, event: 'revenue', value: (((i * 7919) % 20_000) - 3_000) / 100 };
    });
    const erased = ['p4', 'p11', 'p23'];

    // Act: the ingests alternate between the processes; the erasures come meanwhile through both
    const statuses = await Promise.all([
      inParallel([...ingests.keys()], 24, async (i) => {
        const outcome = await ingestOnce(children[i % 2]!.baseUrl, team, ingests[i]);
        return outcome.kind === 'status' ? outcome.status : 0;
      }),
      inParallel(erased, 3, async (participant) => {
        await new Promise((resolve) => setImmediate(resolve));
        const answer = await fetch(`${children[participant.length % 2]!.baseUrl}/api/teams/${team.id}/participants/${participant}`, { method: 'DELETE', headers: { Authorization: `Bearer ${team.token}` } });
        return answer.status;
      }),
    ]);

    // Assert
    expect(statuses[0].filter((status) => status !== 200)).toEqual([]);
    const raw = await fromRawRows(team.id);
    expect([...raw.keys()].sort()).toEqual(['control:revenue', 'control:views', 'treatment:revenue', 'treatment:views']);
    expect(await counters('variant_event_counts', team.id)).toEqual(raw);
    expect(await counters('daily_variant_event_counts', team.id)).toEqual(raw);
  });
});
