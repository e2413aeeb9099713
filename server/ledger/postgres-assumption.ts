import { sql } from 'kysely';
import type { AssumedChecks } from './port';

/**
 * Each team's quota use this month, refused with ASSUMPTION_CHANGED (migration 015) unless each
 * team is at the config version the flush decided at and its accepted ingests fit its quota, and
 * none of the participants it creates nor of its idempotency keys is stored. Every part is a
 * probe of a key; a part with nothing to probe is left out.
 */
export function assumptionsHold({ month, cutoff, teams, participants, keys }: AssumedChecks) {
  const created =
    participants.length === 0
      ? sql``
      : sql`and not exists (select from unnest(${participants.map((p) => p.team)}::bigint[], ${participants.map((p) => p.key)}::text[]) as n(team_id, key)
        cross join lateral (select from participants p where p.team_id = n.team_id and p.key = n.key limit 1) p)`;
  const keyed =
    keys.length === 0
      ? sql``
      : sql`and not exists (select from unnest(${keys.map((k) => k.team)}::bigint[], ${keys.map((k) => k.key)}::text[]) as n(team_id, key)
        cross join lateral (select from ingest_keys k where k.team_id = n.team_id and k.key = n.key and k.created_at > ${cutoff}::timestamptz limit 1) k)`;
  return sql<{ id: number; used: number }>`
    with assumed as (
      select a.id, a.version, a.accepted, a.quota, t.config_version,
        coalesce((select u.count from ingest_usage u where u.team_id = a.id and u.month = ${month}), 0) as used
      from unnest(${teams.map((t) => t.id)}::bigint[], ${teams.map((t) => t.version)}::bigint[], ${teams.map((t) => t.accepted)}::bigint[],
        ${teams.map((t) => t.limit)}::bigint[]) as a(id, version, accepted, quota)
      left join lateral (select t.config_version from teams t where t.id = a.id limit 1) t on true
    )
    select id, used from assumed
    where ingest_flush_assumes((select bool_and(config_version is not distinct from version and (quota is null or used + accepted <= quota)) from assumed) ${created} ${keyed})`;
}

