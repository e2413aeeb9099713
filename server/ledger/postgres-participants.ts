import { sql } from 'kysely';
import type { MetricType } from '../../domain/metric';
import type { RolloutArm } from '../../domain/rollout-arms';
import type { EnrolmentRow } from '../enrolments/store';
import type { ParticipantRow } from '../storage/schema';
import type { NamedParticipant, StoredParticipants } from './port';

/** A participant as read with its histories: each as JSON, enrolled_at in epoch milliseconds. */
type ParticipantWithHistories = ParticipantRow & {
  enrolments: Array<[number, number, number, string, EnrolmentRow['status'], string, number]>;
  exclusions: number[];
  conversions: Array<[number, number, number, string]>;
  covariates: Array<[number, number, string]>;
  activity: Array<[number, string, number, string, MetricType, number | null]>;
  rollout_exposures: Array<[number, RolloutArm]>;
  rollout_conversions: Array<[number, number, number, string]>;
};

/**
 * The named participants with their enrolments, exclusions and conversions, in one statement.
 * `limit 1` keeps each participant's lookup a probe of the (team_id, key) index, and each history
 * is a subquery by the participant's (team_id, participant_id) key, so no part can become a join
 * that scans a whole table — which the planner would choose, and a connection keep, for tables it
 * last saw nearly empty (no autovacuum, no ANALYZE).
 */
export function participantsRead(named: NamedParticipant[]) {
  return sql<ParticipantWithHistories>`
    select p.*,
      (select coalesce(json_agg(json_build_array(e.id, e.experiment_id, e.variant_id, x.key, x.status, v.key, extract(epoch from e.enrolled_at) * 1000) order by e.id), '[]')
        from enrolments e join experiments x on x.id = e.experiment_id join variants v on v.id = e.variant_id
        where e.team_id = p.team_id and e.participant_id = p.id) as enrolments,
      (select coalesce(json_agg(x.experiment_id), '[]') from exclusions x where x.team_id = p.team_id and x.participant_id = p.id) as exclusions,
      (select coalesce(json_agg(json_build_array(c.experiment_id, c.event_id, c.count, c.value::text)), '[]')
        from conversions c where c.team_id = p.team_id and c.participant_id = p.id) as conversions,
      (select coalesce(json_agg(json_build_array(c.experiment_id, c.event_id, c.x::text)), '[]')
        from enrolment_covariates c where c.team_id = p.team_id and c.participant_id = p.id) as covariates,
      (select coalesce(json_agg(json_build_array(a.event_id, a.day, a.count, a.value::text, e.type, e.cap)), '[]')
        from pre_exposure_activity a join events e on e.id = a.event_id where a.team_id = p.team_id and a.participant_id = p.id) as activity,
      (select coalesce(json_agg(json_build_array(x.rollout_id, x.arm)), '[]') from rollout_exposures x join rollouts r on r.id = x.rollout_id
        where x.team_id = p.team_id and x.participant_id = p.id and r.state in ('running', 'paused')) as rollout_exposures,
      (select coalesce(json_agg(json_build_array(c.rollout_id, c.event_id, c.count, c.value::text)), '[]') from rollout_conversions c join rollouts r on r.id = c.rollout_id
        where c.team_id = p.team_id and c.participant_id = p.id and r.state in ('running', 'paused')) as rollout_conversions
    from unnest(${named.map((n) => n.team)}::bigint[], ${named.map((n) => n.key)}::text[]) as k(team_id, key)
    cross join lateral (select * from participants p where p.team_id = k.team_id and p.key = k.key limit 1) p`;
}

export function storedParticipants(answer: { rows: unknown[] } | undefined): StoredParticipants {
  const stored: StoredParticipants = { rows: [], histories: { enrolments: [], exclusions: [], conversions: [], covariates: [], activity: [], rolloutExposures: [], rolloutConversions: [] } };
  for (const { enrolments, exclusions, conversions, covariates, activity, rollout_exposures, rollout_conversions, ...row } of (answer?.rows ?? []) as ParticipantWithHistories[]) {
    stored.rows.push(row);
    const participant_id = row.id;
    for (const [id, experiment_id, variant_id, experiment_key, status, variant_key, enrolledMs] of enrolments) {
      stored.histories.enrolments.push({ participant_id, id, experiment_id, variant_id, experiment_key, status, variant_key, enrolled_at: new Date(enrolledMs) });
    }
    for (const experiment_id of exclusions) stored.histories.exclusions.push({ participant_id, experiment_id });
    for (const [experiment_id, event_id, count, value] of conversions) stored.histories.conversions.push({ participant_id, experiment_id, event_id, count, value });
    for (const [experiment_id, event_id, x] of covariates) stored.histories.covariates.push({ participant_id, experiment_id, event_id, x });
    for (const [event_id, day, count, value, type, cap] of activity) stored.histories.activity.push({ participant_id, event_id, day, count, value, type, cap });
    for (const [rollout_id, arm] of rollout_exposures) stored.histories.rolloutExposures.push({ participant_id, rollout_id, arm });
    for (const [rollout_id, event_id, count, value] of rollout_conversions) stored.histories.rolloutConversions.push({ participant_id, rollout_id, event_id, count, value });
  }
  return stored;
}
