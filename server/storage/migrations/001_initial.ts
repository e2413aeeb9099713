import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

export function initialSchema(engine: Engine): Migration {
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  const boolean = engine === 'postgres' ? 'boolean' : 'integer';
  // Keys and names sort by code point on both engines (SQLite's BINARY), whatever the server's locale.
  const sortedText = engine === 'postgres' ? sql`text collate "C"` : sql`text`;

  return {
    async up(db: Kysely<unknown>) {
      const table = (name: string) =>
        db.schema
          .createTable(name)
          .ifNotExists()
          .addColumn('id', engine === 'postgres' ? 'bigint' : 'integer', (col) =>
            engine === 'postgres' ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement(),
          );
      const teamId = (col: ColumnDefinitionBuilder) => col.notNull().references('teams.id').onDelete('cascade');

      await table('users')
        .addColumn('name', sortedText, (col) => col.notNull())
        .addColumn('email', 'text', (col) => col.notNull().unique())
        .addColumn('current_team_id', 'bigint')
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .execute();

      await table('api_tokens')
        .addColumn('user_id', 'bigint', (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (col) => col.notNull().unique())
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('revoked_at', timestamp)
        .execute();

      await table('teams')
        .addColumn('name', sortedText, (col) => col.notNull())
        .addColumn('ingest_key_hash', 'text', (col) => col.notNull().unique())
        .addColumn('ingest_limit', 'bigint', (col) => col.check(sql`ingest_limit >= 0`))
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .execute();

      await db.schema
        .createTable('memberships')
        .ifNotExists()
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('user_id', 'bigint', (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('memberships_pkey', ['team_id', 'user_id'])
        .execute();
      await db.schema.createIndex('memberships_user').ifNotExists().on('memberships').column('user_id').execute();

      await table('events')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('key', sortedText, (col) => col.notNull())
        .addColumn('description', 'text')
        .addColumn('type', 'text', (col) => col.notNull().check(sql`type in ('unique', 'count')`))
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .addUniqueConstraint('events_team_key', ['team_id', 'key'])
        .execute();

      await table('experiments')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('key', sortedText, (col) => col.notNull())
        .addColumn('description', 'text')
        .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('draft', 'running', 'stopped')`))
        // No cascade: an event that is an experiment's goal cannot be deleted.
        .addColumn('event_id', 'bigint', (col) => col.notNull().references('events.id'))
        .addColumn('seed', 'text', (col) => col.notNull())
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .addColumn('started_at', timestamp)
        .addColumn('stopped_at', timestamp)
        .addUniqueConstraint('experiments_team_key', ['team_id', 'key'])
        .execute();
      await db.schema.createIndex('experiments_team_status').ifNotExists().on('experiments').columns(['team_id', 'status']).execute();
      await db.schema.createIndex('experiments_event').ifNotExists().on('experiments').column('event_id').execute();

      await table('variants')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('experiment_id', 'bigint', (col) => col.notNull().references('experiments.id').onDelete('cascade'))
        .addColumn('key', sortedText, (col) => col.notNull())
        .addColumn('description', 'text')
        .addColumn('control', boolean, (col) => col.notNull())
        .addColumn('traffic', 'integer', (col) => col.check(sql`traffic between 0 and 100`))
        .addColumn('participants', 'bigint', (col) => col.notNull().defaultTo(0).check(sql`participants >= 0`))
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .addUniqueConstraint('variants_experiment_key', ['team_id', 'experiment_id', 'key'])
        .execute();

      await table('features')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('key', sortedText, (col) => col.notNull())
        .addColumn('description', 'text')
        .addColumn('enabled', boolean, (col) => col.notNull())
        .addColumn('value', 'text')
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .addUniqueConstraint('features_team_key', ['team_id', 'key'])
        .execute();

      await table('participants')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('key', sortedText, (col) => col.notNull())
        .addColumn('notes', 'text')
        .addColumn('attributes', 'text', (col) => col.notNull())
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .addUniqueConstraint('participants_team_key', ['team_id', 'key'])
        .execute();

      await table('enrolments')
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('participant_id', 'bigint', (col) => col.notNull().references('participants.id').onDelete('cascade'))
        .addColumn('experiment_id', 'bigint', (col) => col.notNull().references('experiments.id').onDelete('cascade'))
        .addColumn('variant_id', 'bigint', (col) => col.notNull().references('variants.id').onDelete('cascade'))
        .addColumn('enrolled_at', timestamp, (col) => col.notNull())
        .addUniqueConstraint('enrolments_participant_experiment', ['team_id', 'participant_id', 'experiment_id'])
        .execute();
      await db.schema.createIndex('enrolments_experiment').ifNotExists().on('enrolments').columns(['experiment_id']).execute();
      await db.schema.createIndex('enrolments_variant').ifNotExists().on('enrolments').columns(['variant_id']).execute();

      await db.schema
        .createTable('exclusions')
        .ifNotExists()
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('participant_id', 'bigint', (col) => col.notNull().references('participants.id').onDelete('cascade'))
        .addColumn('experiment_id', 'bigint', (col) => col.notNull().references('experiments.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('exclusions_pkey', ['team_id', 'participant_id', 'experiment_id'])
        .execute();
      await db.schema.createIndex('exclusions_experiment').ifNotExists().on('exclusions').column('experiment_id').execute();

      await db.schema
        .createTable('conversions')
        .ifNotExists()
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('participant_id', 'bigint', (col) => col.notNull().references('participants.id').onDelete('cascade'))
        .addColumn('experiment_id', 'bigint', (col) => col.notNull().references('experiments.id').onDelete('cascade'))
        .addColumn('event_id', 'bigint', (col) => col.notNull().references('events.id').onDelete('cascade'))
        .addColumn('count', 'bigint', (col) => col.notNull().check(sql`count > 0`))
        .addPrimaryKeyConstraint('conversions_pkey', ['team_id', 'participant_id', 'experiment_id', 'event_id'])
        .execute();
      await db.schema.createIndex('conversions_experiment').ifNotExists().on('conversions').column('experiment_id').execute();
      await db.schema.createIndex('conversions_event').ifNotExists().on('conversions').column('event_id').execute();

      await db.schema
        .createTable('variant_event_counts')
        .ifNotExists()
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('variant_id', 'bigint', (col) => col.notNull().references('variants.id').onDelete('cascade'))
        .addColumn('event_id', 'bigint', (col) => col.notNull().references('events.id').onDelete('cascade'))
        .addColumn('conversions', 'bigint', (col) => col.notNull().check(sql`conversions >= 0`))
        .addColumn('unique_conversions', 'bigint', (col) => col.notNull().check(sql`unique_conversions >= 0`))
        .addPrimaryKeyConstraint('variant_event_counts_pkey', ['team_id', 'variant_id', 'event_id'])
        .execute();
      await db.schema.createIndex('variant_event_counts_event').ifNotExists().on('variant_event_counts').column('event_id').execute();

      await db.schema
        .createTable('ingest_usage')
        .ifNotExists()
        .addColumn('team_id', 'bigint', teamId)
        .addColumn('month', 'text', (col) => col.notNull())
        .addColumn('count', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('ingest_usage_pkey', ['team_id', 'month'])
        .execute();
    },
  };
}
