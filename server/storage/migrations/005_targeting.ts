import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * Targeting of experiments: the bucket rule each uses (`hash_version`: 1 for every experiment
 * stored before, so that nobody is reshuffled; the service writes 2 for new ones), its coverage
 * and exclusion-group range in hundredths of a percent, its conditions (JSON), and the
 * history of its coverage changes.
 */
export function targeting(engine: Engine): Migration {
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      const experiments = () => db.schema.alterTable('experiments');
      await experiments().addColumn('hash_version', 'integer', (col) => col.notNull().defaultTo(sql`1`).check(sql`hash_version in (1, 2)`)).execute();
      await experiments().addColumn('coverage', 'integer', (col) => col.notNull().defaultTo(sql`10000`).check(sql`coverage between 0 and 10000`)).execute();
      await experiments().addColumn('group_key', 'text').execute();
      await experiments().addColumn('group_start', 'integer', (col) => col.check(sql`group_start >= 0`)).execute();
      await experiments().addColumn('group_end', 'integer', (col) => col.check(sql`group_end <= 10000`)).execute();
      await experiments().addColumn('conditions', 'text').execute();
      if (engine === 'postgres') {
        // SQLite cannot add a table constraint to a table; there the service's checks hold it.
        await sql`alter table experiments add constraint experiments_group_range
          check ((group_key is null and group_start is null and group_end is null) or (group_key is not null and group_start < group_end))`.execute(db);
      }
      await db.schema
        .createTable('coverage_changes')
        .addColumn('id', engine === 'postgres' ? 'bigint' : 'integer', (col) =>
          engine === 'postgres' ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement(),
        )
        .addColumn('team_id', 'bigint', (col) => col.notNull().references('teams.id').onDelete('cascade'))
        .addColumn('experiment_id', 'bigint', (col) => col.notNull().references('experiments.id').onDelete('cascade'))
        .addColumn('changed_at', timestamp, (col) => col.notNull())
        .addColumn('from_coverage', 'integer', (col) => col.notNull())
        .addColumn('to_coverage', 'integer', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('coverage_changes_experiment').on('coverage_changes').columns(['experiment_id', 'id']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('coverage_changes').execute();
      if (engine === 'postgres') await sql`alter table experiments drop constraint experiments_group_range`.execute(db);
      for (const column of ['conditions', 'group_end', 'group_start', 'group_key', 'coverage', 'hash_version']) {
        await db.schema.alterTable('experiments').dropColumn(column).execute();
      }
    },
  };
}
