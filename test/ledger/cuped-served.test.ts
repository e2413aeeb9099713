// The regression-adjusted figures the service serves, end to end: each participant of
// test/vectors/cuped.py's `served` dataset — orders and spend before its enrolment, then after — is
// written through the real server (its history as the ingest keeps it, its enrolment and events
// through the ingest), and the variant statistics and the results answer what the independent
// implementation computed from the participants' own values, within 1e-4, on both engines.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import vectors from '../vectors/cuped.json';
import { addDays } from '../../domain/days';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment } from '../support/fixtures';

type Expected = (typeof vectors.served.expected)['orders'];
const fraction = (text: string) => {
  const [numerator, denominator = '1'] = text.split('/');
  return Number(numerator) / Number(denominator);
};

function expectClose(served: Record<string, unknown> | null, expected: Expected): void {
  expect(served).not.toBeNull();
  const pairs: Array<[string, unknown, number | null]> = [
    ['theta', served!.theta, expected.theta],
    ['difference', served!.difference, expected.difference],
    ['standard_error', served!.standard_error, expected.standardError],
    ['degrees_of_freedom', served!.degrees_of_freedom, expected.degreesOfFreedom],
    ['p_value', served!.p_value, expected.pValue],
    ['lower', (served!.difference_interval as { lower: number }).lower, expected.interval.lower],
    ['upper', (served!.difference_interval as { upper: number }).upper, expected.interval.upper],
    ['chance_to_beat_control', served!.chance_to_beat_control, expected.chanceToBeatControl],
    ['variance_reduction', served!.variance_reduction, expected.varianceReduction],
    ['relative_uplift', served!.relative_uplift, expected.relativeUplift],
    ['relative_standard_error', served!.relative_standard_error, expected.relativeStandardError],
    ['relative_p_value', served!.relative_p_value, expected.relativePValue],
  ];
  for (const [name, actual, reference] of pairs) {
    expect(typeof actual, name).toBe('number');
    expect(Math.abs((actual as number) - reference!), `${name}: served ${String(actual)}, reference ${reference}`).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(reference!)));
  }
}

describe.each(engines)('served regression adjustment on %s', (engine) => {
  const server = useServer(engine);

  it("when participants with orders and spend before their enrolment convert after it, then each event's regression_adjustment agrees with the independent implementation within 1e-4, in the variant statistics and the results", async () => {
    // Arrange: `orders` (count) is the goal, `spend` (value) a secondary event
    const team = await server().newTeam();
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'orders', type: 'count' } });
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'spend', type: 'value' } });
    await createExperiment(team, 'served', { event: 'orders' });
    const db = server().storage.db;
    const events = await sql<{ id: number; key: string }>`select id, key from events where team_id = ${team.id}`.execute(db);
    const eventId = (key: string) => events.rows.find((e) => e.key === key)!.id;
    const today = new Date().toISOString().slice(0, 10);
    const arms = [
      ['control', vectors.served.control],
      ['treatment', vectors.served.variant],
    ] as const;

    // Act: each participant is created, its history written as the ingest keeps it (days before today), then enrolled and converting
    for (const [variant, participants] of arms) {
      for (const [i, [ordersBefore, ordersAfter, spentBefore, spentAfter]] of participants.entries()) {
        const key = `${variant}-${i}`;
        const created = await team.api.POST('/api/teams/{team}/participants', { params: { path }, body: { key } });
        expect(created.response.status).toBe(200);
        const { rows } = await sql<{ id: number }>`select id from participants where team_id = ${team.id} and key = ${key}`.execute(db);
        const history: Array<[string, string, number, bigint]> = [
          ['orders', addDays(today, -2), Number(ordersBefore), 0n],
          ['spend', addDays(today, -3), 1, BigInt(Math.round(fraction(spentBefore!) * 1e6))],
        ];
        for (const [event, day, count, value] of history.filter(([event, , count, value]) => count > 0 && (event === 'orders' || value !== 0n))) {
          await sql`insert into pre_exposure_activity (team_id, participant_id, event_id, day, count, value) values (${team.id}, ${rows[0]!.id}, ${eventId(event)}, ${day}, ${count}, ${value.toString()})`.execute(db);
        }
        const items = [
          { participant: key, experiment: 'served', variant },
          ...Array.from({ length: Number(ordersAfter) }, () => ({ participant: key, event: 'orders', enrol: false })),
          ...(fraction(spentAfter!) > 0 ? [{ participant: key, event: 'spend', value: fraction(spentAfter!), enrol: false }] : []),
        ];
        const batch = await team.ingest.POST('/api/teams/{team}/ingest/batch', { params: { path }, body: { items } });
        expect(batch.response.status, JSON.stringify(batch.error)).toBe(200);
      }
    }
    const statistics = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { ...path, experiment: 'served', variant: 'treatment' } } });
    const results = await team.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { ...path, experiment: 'served' }, query: { events: ['orders', 'spend'] } } });

    // Assert
    expect(statistics.response.status).toBe(200);
    const served = (event: string) => statistics.data!.data.events.find((e) => e.event === event)!.regression_adjustment as Record<string, unknown> | null;
    expectClose(served('orders'), vectors.served.expected.orders);
    expectClose(served('spend'), vectors.served.expected.spend);
    expect(results.response.status, JSON.stringify(results.error)).toBe(200);
    for (const event of ['orders', 'spend'] as const) {
      const treatment = results.data!.data.events.find((e) => e.event === event)!.variants.find((v) => v.variant === 'treatment')!;
      expect(treatment.statistics.regression_adjustment).toEqual(served(event));
      const control = results.data!.data.events.find((e) => e.event === event)!.variants.find((v) => v.variant === 'control')!;
      expect(control.statistics.regression_adjustment).toBeNull();
    }
    // The always-valid sequence of the means judges the adjusted difference
    const orders = results.data!.data.events.find((e) => e.event === 'orders')!.variants.find((v) => v.variant === 'treatment')!;
    expect(orders.means_sequence!.difference).toBeCloseTo(vectors.served.expected.orders.difference, 6);
  });
});
