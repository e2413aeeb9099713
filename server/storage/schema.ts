import type { ColumnType, Generated, Kysely, Selectable } from 'kysely';
import type { FlagType } from '../../domain/flag-types';
import type { MemberRole } from '../../domain/member-roles';
import type { Bool, ExactSum, Timestamp } from './columns';
import type { RolloutTables } from './schema-rollouts';

/** A team as stored: what authentication finds by an ingest key and every team-scoped route loads. */
export type TeamRow = Selectable<Database['teams']>;
/** A participant as stored: what the ledger writes and the participants' routes read. */
export type ParticipantRow = Selectable<Database['participants']>;

/** Every table, as Kysely reads and writes it (the safe rollouts' tables in schema-rollouts.ts). */
export interface Database extends RolloutTables {
  users: {
    id: Generated<number>;
    name: string;
    email: string;
    current_team_id: number | null;
    created_at: Timestamp;
  };
  api_tokens: {
    id: Generated<number>;
    user_id: number;
    token_hash: string;
    created_at: Timestamp;
    revoked_at: Timestamp | null;
    /** The token only reads, whatever its user's role (migration 019). */
    read_only: ColumnType<boolean | number, boolean | undefined, boolean>;
  };
  teams: {
    id: Generated<number>;
    name: string;
    ingest_key_hash: string;
    ingest_limit: number | null;
    config_version: Generated<number>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  memberships: {
    team_id: number;
    user_id: number;
    role: ColumnType<MemberRole, MemberRole | undefined, MemberRole>;
  };
  events: {
    id: Generated<number>;
    team_id: number;
    key: string;
    description: string | null;
    type: 'unique' | 'count' | 'value';
    cap: number | null;
    direction: ColumnType<'increase' | 'decrease', 'increase' | 'decrease' | undefined, 'increase' | 'decrease'>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  experiments: {
    id: Generated<number>;
    team_id: number;
    key: string;
    description: string | null;
    status: 'draft' | 'running' | 'stopped';
    event_id: number;
    seed: string;
    /** 1: 100 buckets (experiments stored before migration 005); 2: 10 000 buckets. */
    hash_version: Generated<1 | 2>;
    /** Hundredths of a percent, 0–10 000. */
    coverage: Generated<number>;
    group_key: string | null;
    /** Hundredths of a percent: the range [group_start, group_end) of the group's hash space. */
    group_start: number | null;
    group_end: number | null;
    /** The experiment's condition as JSON, or null for everyone. */
    conditions: string | null;
    /** Relative to the control (0.05 = 5 %); null when none is stated (migration 011). */
    minimum_effect: number | null;
    /** The CUPED window in whole days before enrolment (0 to 60, 0: off). */
    pre_exposure_days: ColumnType<number, number | undefined, number>;
    created_at: Timestamp;
    updated_at: Timestamp;
    started_at: Timestamp | null;
    stopped_at: Timestamp | null;
  };
  /** The guardrail events of each experiment, `position` its order in the experiment's list. */
  experiment_guardrails: {
    team_id: number;
    experiment_id: number;
    event_id: number;
    position: number;
  };
  variants: {
    id: Generated<number>;
    team_id: number;
    experiment_id: number;
    key: string;
    description: string | null;
    control: Bool;
    traffic: number | null;
    participants: Generated<number>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  features: {
    id: Generated<number>;
    team_id: number;
    key: string;
    description: string | null;
    enabled: Bool;
    /** The contract's FlagType: how `value` and the rules' values read. */
    type: ColumnType<FlagType, FlagType | undefined, FlagType>;
    value: string | null;
    /** JSON text of the flag's rules; '[]' for none. */
    rules: ColumnType<string, string | undefined, string>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  participants: {
    id: Generated<number>;
    team_id: number;
    key: string;
    notes: string | null;
    attributes: string;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  enrolments: {
    id: Generated<number>;
    team_id: number;
    participant_id: number;
    experiment_id: number;
    variant_id: number;
    enrolled_at: Timestamp;
  };
  exclusions: {
    team_id: number;
    participant_id: number;
    experiment_id: number;
  };
  conversions: {
    team_id: number;
    participant_id: number;
    experiment_id: number;
    event_id: number;
    count: number;
    /** The sum of the values its events carried, in micro-units. */
    value: ExactSum;
  };
  variant_event_counts: {
    team_id: number;
    variant_id: number;
    event_id: number;
    conversions: number;
    unique_conversions: number;
    /** Σy and Σy² of the participants' capped totals (storage/exact-sums.ts), in micro-units. */
    sum_y: ExactSum;
    sum_y2: ExactSum;
    /** Σx, Σx² and Σxy of the participants' covariates x (frozen at enrolment) and capped totals y, in micro-units. */
    sum_x: ExactSum;
    sum_x2: ExactSum;
    sum_xy: ExactSum;
  };
  daily_variant_counts: {
    team_id: number;
    variant_id: number;
    day: string;
    participants: number;
  };
  daily_variant_event_counts: {
    team_id: number;
    variant_id: number;
    event_id: number;
    day: string;
    conversions: number;
    unique_conversions: number;
    sum_y: ExactSum;
    sum_y2: ExactSum;
    /** Σx, Σx² and Σxy of the participants' covariates x (frozen at enrolment) and capped totals y, in micro-units. */
    sum_x: ExactSum;
    sum_x2: ExactSum;
    sum_xy: ExactSum;
  };
  /** What a participant did per event and UTC day, kept for the CUPED windows and swept past the longest. */
  pre_exposure_activity: {
    team_id: number;
    participant_id: number;
    event_id: number;
    day: string;
    count: number;
    value: ExactSum;
  };
  /** An enrolment's covariate x per event (micro-units), frozen when it enrolled. */
  enrolment_covariates: {
    team_id: number;
    participant_id: number;
    experiment_id: number;
    event_id: number;
    x: ExactSum;
  };
  coverage_changes: {
    id: Generated<number>;
    team_id: number;
    experiment_id: number;
    changed_at: Timestamp;
    from_coverage: number;
    to_coverage: number;
  };
  ingest_usage: {
    team_id: number;
    month: string;
    count: number;
  };
  /** An ingest item's idempotency key and the IngestOutcome (JSON) it was answered. */
  ingest_keys: {
    team_id: number;
    key: string;
    outcome: string;
    created_at: Timestamp;
  };
  /** One change to a team's resources (migration 020); `before` and `after` are JSON text. */
  audit_log: {
    id: Generated<number>;
    team_id: number;
    at: Timestamp;
    actor_type: 'user' | 'admin-cli' | 'service';
    actor_user_id: number | null;
    actor_email: string | null;
    actor_reason: string | null;
    resource_type: string;
    resource_key: string;
    action: string;
    before: string | null;
    after: string | null;
    request_id: string | null;
  };
  webhook_endpoints: {
    id: Generated<number>;
    team_id: number;
    key: string;
    url: string;
    /** JSON text of the endpoint's event types. */
    event_types: string;
    enabled: Bool;
    description: string | null;
    disabled_reason: string | null;
    secret: string;
    /** The secret before the last rotation, signing deliveries beside `secret` until `previous_secret_until`. */
    previous_secret: ColumnType<string | null, string | null | undefined, string | null>;
    previous_secret_until: ColumnType<Date | string | null, string | null | undefined, string | null>;
    deliveries_queued: ColumnType<number, number | undefined, number>;
    lease_owner: ColumnType<string | null, string | null | undefined, string | null>;
    lease_until: ColumnType<Date | string | null, string | null | undefined, string | null>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  webhook_deliveries: {
    id: Generated<number>;
    endpoint_id: number;
    /** The delivery's place in its endpoint's queue: 1, 2, … */
    number: number;
    audit_entry_id: number;
    event_type: string;
    /** The audit entry's JSON, the exact bytes every attempt sends. */
    body: string;
    status: 'pending' | 'delivered' | 'failed';
    attempts: ColumnType<number, number | undefined, number>;
    last_status: number | null;
    last_error: string | null;
    first_attempt_at: ColumnType<Date | string | null, string | null | undefined, string | null>;
    last_attempt_at: ColumnType<Date | string | null, string | null | undefined, string | null>;
    next_attempt_at: ColumnType<Date | string | null, string | null | undefined, string | null>;
    created_at: Timestamp;
    delivered_at: ColumnType<Date | string | null, string | null | undefined, string | null>;
  };
}

/** The query builder over this schema, on either engine (opened by database.ts). */
export type Db = Kysely<Database>;
