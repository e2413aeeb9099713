import { sql, type Kysely, type Migration } from 'kysely';

/** A flag's ordered rules (the contract's FeatureRules), as JSON text: read and written whole. */
export const flagRules: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('features')
      .addColumn('rules', 'text', (col) => col.notNull().defaultTo(sql`'[]'`))
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('features').dropColumn('rules').execute();
  },
};
