import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * Safe rollouts: one row per rollout of a flag, numbered per flag (`number`, 1, 2, …). A flag
 * has at most one rollout that is `running` or `paused` (the partial unique index). `conditions`,
 * `guardrails`, `steps`, `history` and `rollback` are JSON text; `seed` never changes.
 */
export function rollouts(engine: Engine): Migration {
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  const real = engine === 'postgres' ? 'double precision' : 'real';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('rollouts')
        .addColumn('id', engine === 'postgres' ? 'bigint' : 'integer', (col) =>
          engine === 'postgres' ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement(),
        )
        .addColumn('team_id', 'bigint', (col) => col.notNull().references('teams.id').onDelete('cascade'))
        .addColumn('feature_id', 'bigint', (col) => col.notNull().references('features.id').onDelete('cascade'))
        .addColumn('number', 'integer', (col) => col.notNull().check(sql`number >= 1`))
        .addColumn('state', 'text', (col) => col.notNull().check(sql`state in ('running', 'paused', 'rolled_back', 'released')`))
        .addColumn('value', 'text')
        .addColumn('conditions', 'text', (col) => col.notNull())
        .addColumn('guardrails', 'text', (col) => col.notNull())
        .addColumn('steps', 'text', (col) => col.notNull())
        .addColumn('significance', real, (col) => col.notNull().check(sql`significance > 0 and significance <= 0.2`))
        .addColumn('step', 'integer', (col) => col.notNull().check(sql`step >= 0`))
        .addColumn('seed', 'text', (col) => col.notNull())
        .addColumn('history', 'text', (col) => col.notNull())
        .addColumn('rollback', 'text')
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .addUniqueConstraint('rollouts_feature_number', ['feature_id', 'number'])
        .execute();
      await sql`create unique index rollouts_one_active on rollouts (feature_id) where state in ('running', 'paused')`.execute(db);
      await db.schema.createIndex('rollouts_team').on('rollouts').column('team_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('rollouts').execute();
    },
  };
}
