import { sql, type Kysely, type Migration } from 'kysely';

/** A flag's type (the contract's FlagType): how its text values read. Every stored flag is a string flag. */
export const flagTypes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('features')
      .addColumn('type', 'text', (col) => col.notNull().defaultTo(sql`'string'`).check(sql`type in ('string', 'boolean', 'number', 'json')`))
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('features').dropColumn('type').execute();
  },
};
