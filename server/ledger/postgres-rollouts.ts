import { sql } from 'kysely';
import type { LedgerChange } from './change';
import { ARM_EVENT_COUNTERS, rolloutCountersOf } from './rollout-counters';

/**
 * PostgreSQL: the rollouts' exposures, guardrail conversions and their arms' counters, one
 * statement of data-modifying CTEs sent after the flush's own write (postgres.ts) in the same
 * round trip, so the participants it created are stored and found by their key; none without
 * exposures or conversions.
 */
export function rolloutArmsWrite(change: LedgerChange) {
  if (change.rolloutExposures.length === 0 && change.rolloutConversions.size === 0) return undefined;
  const { arms, events } = rolloutCountersOf(change);
  const exposures = change.rolloutExposures;
  const moves = [...change.rolloutConversions.values()];
  return sql`
    with exposed as (
      insert into rollout_exposures (team_id, rollout_id, participant_id, arm, exposed_at)
      select e.team_id, e.rollout_id, p.id, e.arm, ${change.at}::timestamptz
      from unnest(${exposures.map((e) => e.teamId)}::bigint[], ${exposures.map((e) => e.rolloutId)}::bigint[], ${exposures.map((e) => e.state.row.key)}::text[],
        ${exposures.map((e) => e.arm)}::text[]) as e(team_id, rollout_id, key, arm)
      cross join lateral (select id from participants p where p.team_id = e.team_id and p.key = e.key limit 1) p
    ), armed as (
      insert into rollout_arm_counts (team_id, rollout_id, arm, participants)
      select * from unnest(${arms.map((a) => a.teamId)}::bigint[], ${arms.map((a) => a.rolloutId)}::bigint[], ${arms.map((a) => a.arm)}::text[], ${arms.map((a) => a.participants)}::bigint[])
      on conflict (rollout_id, arm) do update set participants = rollout_arm_counts.participants + excluded.participants
    ), converted as (
      insert into rollout_conversions (team_id, rollout_id, participant_id, event_id, count, value)
      select c.team_id, c.rollout_id, p.id, c.event_id, c.added, c.value
      from unnest(${moves.map((c) => c.teamId)}::bigint[], ${moves.map((c) => c.rolloutId)}::bigint[], ${moves.map((c) => c.state.row.key)}::text[], ${moves.map((c) => c.eventId)}::bigint[],
        ${moves.map((c) => c.after.count - c.before.count)}::bigint[], ${moves.map((c) => (c.after.value - c.before.value).toString())}::numeric[]) as c(team_id, rollout_id, key, event_id, added, value)
      cross join lateral (select id from participants p where p.team_id = c.team_id and p.key = c.key limit 1) p
      on conflict (rollout_id, participant_id, event_id) do update set count = rollout_conversions.count + excluded.count, value = rollout_conversions.value + excluded.value
    )
    insert into rollout_arm_event_counts (team_id, rollout_id, arm, event_id, ${sql.raw(ARM_EVENT_COUNTERS.join(', '))})
    select * from unnest(${events.map((e) => e.teamId)}::bigint[], ${events.map((e) => e.rolloutId)}::bigint[], ${events.map((e) => e.arm)}::text[], ${events.map((e) => e.eventId)}::bigint[],
      ${sql.join(ARM_EVENT_COUNTERS.map((column) => sql`${events.map((e) => e.counters[column].toString())}::${sql.raw(column.startsWith('sum') ? 'numeric' : 'bigint')}[]`))})
    on conflict (rollout_id, arm, event_id) do update set ${sql.raw(ARM_EVENT_COUNTERS.map((column) => `${column} = rollout_arm_event_counts.${column} + excluded.${column}`).join(', '))}`;
}
