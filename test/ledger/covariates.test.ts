// CUPED's counters: each enrolment's covariate x is frozen when it enrols, from the participant's
// pre-exposure history, and each variant × event keeps Σx, Σx², Σxy beside Σy, Σy² — exactly, in
// the totals and the daily roll-up — through the real server, on both engines. The expected sums
// are recomputed here from the rows the test wrote, with plain arithmetic.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { addDays } from '../../domain/days';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, ingestOk } from '../support/fixtures';
import type { TestTeam } from '../support/team';

const M = 1_000_000n;
const today = () => new Date().toISOString().slice(0, 10);
type Sums = Record<string, { sum_x: bigint; sum_x2: bigint; sum_xy: bigint }>;

describe.each(engines)('CUPED counters on %s', (engine) => {
  const server = useServer(engine);
  const db = () => server().storage.db;

  async function idsOf(team: TestTeam) {
    const participants = await sql<{ id: number; key: string }>`select id, key from participants where team_id = ${team.id}`.execute(db());
    const events = await sql<{ id: number; key: string }>`select id, key from events where team_id = ${team.id}`.execute(db());
    return { participant: new Map(participants.rows.map((p) => [p.key, Number(p.id)])), event: new Map(events.rows.map((e) => [e.key, Number(e.id)])) };
  }

  /** Σx, Σx², Σxy by `variant:event` keys, from the totals or summed over the daily roll-up. */
  async function sumsOf(team: TestTeam, table: 'variant_event_counts' | 'daily_variant_event_counts'): Promise<Sums> {
    const { rows } = await sql<{ variant: string; event: string; sum_x: string; sum_x2: string; sum_xy: string }>`
      select v.key as variant, e.key as event, cast(c.sum_x as text) as sum_x, cast(c.sum_x2 as text) as sum_x2, cast(c.sum_xy as text) as sum_xy
      from ${sql.table(table)} c join variants v on v.id = c.variant_id join events e on e.id = c.event_id where c.team_id = ${team.id}`.execute(db());
    const sums: Sums = {};
    for (const row of rows) {
      const key = `${row.variant}:${row.event}`;
      const into = (sums[key] ??= { sum_x: 0n, sum_x2: 0n, sum_xy: 0n });
      into.sum_x += BigInt(row.sum_x);
      into.sum_x2 += BigInt(row.sum_x2);
      into.sum_xy += BigInt(row.sum_xy);
    }
    return Object.fromEntries(Object.entries(sums).filter(([, s]) => s.sum_x !== 0n || s.sum_x2 !== 0n || s.sum_xy !== 0n));
  }

  it('when participants with a history enrol and convert, then x is frozen from the window before the day of enrolment and Σx, Σx², Σxy are exact in the totals and the roll-up; a deletion takes its part back exactly, an unenrolment (intention to treat) keeps it', async () => {
    // Arrange: `goal` (count) drives the experiment; `spend` (value) is a second metric
    const team = await server().newTeam();
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'goal', type: 'count' } });
    await createExperiment(team, 'checkout');
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'spend', type: 'value' } });
    const keys = Array.from({ length: 12 }, (_, i) => `p${i}`);
    for (const key of keys) await ingestOk(team, { participant: key, event: 'goal', enrol: false });
    const ids = await idsOf(team);
    const now = today();
    // Each p_i did `goal` i % 4 times yesterday and 9 times 20 days ago (outside the 14-day window), and spent i × 1.5 three days ago.
    const x = new Map<string, { goal: bigint; spend: bigint }>();
    for (const [i, key] of keys.entries()) {
      const participant = ids.participant.get(key)!;
      const rows: Array<[string, string, number, bigint]> = [['goal', addDays(now, -1), i % 4, 0n], ['goal', addDays(now, -20), 9, 0n], ['spend', addDays(now, -3), 1, (BigInt(i) * 3n * M) / 2n]];
      for (const [event, day, count, value] of rows.filter(([, , count]) => count > 0)) {
        await sql`insert into pre_exposure_activity (team_id, participant_id, event_id, day, count, value) values (${team.id}, ${participant}, ${ids.event.get(event)!}, ${day}, ${count}, ${value.toString()})`.execute(db());
      }
      x.set(key, { goal: BigInt(i % 4) * M, spend: (BigInt(i) * 3n * M) / 2n });
    }
    x.set('fresh', { goal: 0n, spend: 0n });

    // Act: each enrols with a goal — singly and in a batch — and some convert again and spend. The
    // variants are named (odd keys in treatment) so that both arms have goal covariates: by hash,
    // the nine with a goal covariate all fell in one arm 1 time in 256.
    const enrolling = (key: string) => ({ participant: key, event: 'goal', experiment: 'checkout', variant: Number(key.slice(1)) % 2 ? 'treatment' : 'control' });
    for (const key of keys.slice(0, 4)) await ingestOk(team, enrolling(key));
    const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', {
      params: { path: { team: team.id } },
      body: {
        items: [
          ...keys.slice(4).map(enrolling),
          { participant: 'fresh', event: 'goal' },
          { participant: 'p5', event: 'goal' },
          { participant: 'p6', event: 'spend', value: 2.25 },
          { participant: 'p2', event: 'spend', value: -1 },
        ],
      },
    });
    expect(batch.response.status).toBe(200);
    await ingestOk(team, { participant: 'p7', event: 'spend', value: 10 });
    await ingestOk(team, { participant: 'p5', event: 'goal' });

    // Assert: the sums recomputed from each participant's variant, x and y
    async function expected(): Promise<Sums> {
      const { rows } = await sql<{ key: string; variant: string }>`select p.key, v.key as variant from enrolments n join participants p on p.id = n.participant_id join variants v on v.id = n.variant_id where n.team_id = ${team.id}`.execute(db());
      const y = await sql<{ key: string; event: string; count: string; value: string }>`select p.key, e.key as event, cast(c.count as text) as count, cast(c.value as text) as value from conversions c join participants p on p.id = c.participant_id join events e on e.id = c.event_id where c.team_id = ${team.id}`.execute(db());
      const yOf = (key: string, event: string) => {
        const row = y.rows.find((r) => r.key === key && r.event === event);
        return !row ? 0n : event === 'goal' ? BigInt(row.count) * M : BigInt(row.value);
      };
      const sums: Sums = {};
      for (const { key, variant } of rows) {
        for (const event of ['goal', 'spend'] as const) {
          const xi = x.get(key)![event];
          const into = (sums[`${variant}:${event}`] ??= { sum_x: 0n, sum_x2: 0n, sum_xy: 0n });
          into.sum_x += xi;
          into.sum_x2 += xi * xi;
          into.sum_xy += xi * yOf(key, event);
        }
      }
      return Object.fromEntries(Object.entries(sums).filter(([, s]) => s.sum_x !== 0n || s.sum_x2 !== 0n || s.sum_xy !== 0n));
    }
    const all = await expected();
    expect(Object.keys(all).sort()).toEqual(['control:goal', 'control:spend', 'treatment:goal', 'treatment:spend']);
    expect(await sumsOf(team, 'variant_event_counts')).toEqual(all);
    expect(await sumsOf(team, 'daily_variant_event_counts')).toEqual(all);
    const frozen = await sql<{ key: string; event: string; x: string }>`select p.key, e.key as event, cast(c.x as text) as x from enrolment_covariates c join participants p on p.id = c.participant_id join events e on e.id = c.event_id where c.team_id = ${team.id}`.execute(db());
    const nonZero = [...x].flatMap(([key, xs]) => (['goal', 'spend'] as const).filter((event) => xs[event] !== 0n).map((event) => `${key} ${event} ${xs[event]}`));
    expect(frozen.rows.map((r) => `${r.key} ${r.event} ${BigInt(r.x)}`).sort()).toEqual(nonZero.sort());

    // Act: p6 is deleted (taken back), p7 unenrolled (kept, by intention to treat)
    const before = await sumsOf(team, 'variant_event_counts');
    const deleted = await team.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'p6' } } });
    expect(deleted.response.status).toBe(200);
    const kept = await sumsOf(team, 'variant_event_counts');
    x.delete('p6');
    const others = await expected();
    const unenrolled = await team.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path: { team: team.id, participant: 'p7', experiment: 'checkout' } } });
    expect(unenrolled.response.status, JSON.stringify(unenrolled.error)).toBe(200);

    // Assert: the deletion left exactly the sums of the others; the unenrolment moved nothing, and its covariates went with its enrolment
    expect(kept).toEqual(others);
    expect(kept).not.toEqual(before);
    expect(await sumsOf(team, 'variant_event_counts')).toEqual(kept);
    const left = await sql<{ key: string }>`select p.key from enrolment_covariates c join participants p on p.id = c.participant_id where c.team_id = ${team.id}`.execute(db());
    expect(left.rows.map((r) => r.key)).not.toContain('p7');
    expect(left.rows.map((r) => r.key)).not.toContain('p6');
  });
});
