import type { ColumnType, Generated } from 'kysely';

// Timestamps are written as RFC 3339 strings on both engines; PostgreSQL reads them back as Date.
type Timestamp = ColumnType<Date | string, string, string>;
// SQLite stores booleans as 0/1 (bound so by server/storage/sqlite-statements.ts); PostgreSQL as boolean.
type Bool = ColumnType<boolean | number, boolean, boolean>;

export interface Database {
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
  };
  events: {
    id: Generated<number>;
    team_id: number;
    key: string;
    description: string | null;
    type: 'unique' | 'count';
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
    created_at: Timestamp;
    updated_at: Timestamp;
    started_at: Timestamp | null;
    stopped_at: Timestamp | null;
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
    value: string | null;
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
  };
  variant_event_counts: {
    team_id: number;
    variant_id: number;
    event_id: number;
    conversions: number;
    unique_conversions: number;
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
  };
  ingest_usage: {
    team_id: number;
    month: string;
    count: number;
  };
}
