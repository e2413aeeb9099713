import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The smallest effect an experiment is meant to detect, relative to the control (0.05 = 5 %):
 * what the planning figures of the statistics are computed for. Null — every stored
 * experiment — when none is stated.
 */
export const minimumEffect: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('experiments')
      .addColumn('minimum_effect', 'double precision', (col) => col.check(sql`minimum_effect > 0 and minimum_effect <= 10`))
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('experiments').dropColumn('minimum_effect').execute();
  },
};
