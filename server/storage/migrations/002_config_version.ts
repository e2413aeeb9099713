import { sql, type Kysely, type Migration } from 'kysely';

/**
 * A counter on the team, raised after every change to what its config holds (experiments, their
 * variants and goal events, feature flags): servers cache a team's config under it.
 */
export const configVersion: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('teams')
      .addColumn('config_version', 'bigint', (col) => col.notNull().defaultTo(sql`0`))
      .execute();
  },
};
