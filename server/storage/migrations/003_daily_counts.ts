import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';

/**
 * The daily roll-up of the counters: how much each variant's participants and each variant's
 * conversions on each event changed on each UTC day (negative when participants left). Summed
 * up to a day, they are the counters as they stood at that day's end — the results' history.
 * What was counted before the roll-up existed is put on the day of the upgrade, so that the
 * history always adds up to the counters.
 */
export const dailyCounts: Migration = {
  async up(db: Kysely<unknown>) {
    const teamId = (col: ColumnDefinitionBuilder) => col.notNull().references('teams.id').onDelete('cascade');
    const variantId = (col: ColumnDefinitionBuilder) => col.notNull().references('variants.id').onDelete('cascade');
    await db.schema
      .createTable('daily_variant_counts')
      .addColumn('team_id', 'bigint', teamId)
      .addColumn('variant_id', 'bigint', variantId)
      .addColumn('day', 'text', (col) => col.notNull())
      .addColumn('participants', 'bigint', (col) => col.notNull())
      .addPrimaryKeyConstraint('daily_variant_counts_pkey', ['team_id', 'variant_id', 'day'])
      .execute();
    await db.schema.createIndex('daily_variant_counts_variant').on('daily_variant_counts').columns(['variant_id', 'day']).execute();
    await db.schema
      .createTable('daily_variant_event_counts')
      .addColumn('team_id', 'bigint', teamId)
      .addColumn('variant_id', 'bigint', variantId)
      .addColumn('event_id', 'bigint', (col) => col.notNull().references('events.id').onDelete('cascade'))
      .addColumn('day', 'text', (col) => col.notNull())
      .addColumn('conversions', 'bigint', (col) => col.notNull())
      .addColumn('unique_conversions', 'bigint', (col) => col.notNull())
      .addPrimaryKeyConstraint('daily_variant_event_counts_pkey', ['team_id', 'variant_id', 'event_id', 'day'])
      .execute();
    await db.schema.createIndex('daily_variant_event_counts_variant').on('daily_variant_event_counts').columns(['variant_id', 'day']).execute();
    await db.schema.createIndex('daily_variant_event_counts_event').on('daily_variant_event_counts').column('event_id').execute();

    const today = new Date().toISOString().slice(0, 10);
    await sql`insert into daily_variant_counts (team_id, variant_id, day, participants)
      select team_id, id, ${today}, participants from variants where participants <> 0`.execute(db);
    await sql`insert into daily_variant_event_counts (team_id, variant_id, event_id, day, conversions, unique_conversions)
      select team_id, variant_id, event_id, ${today}, conversions, unique_conversions from variant_event_counts
      where conversions <> 0 or unique_conversions <> 0`.execute(db);
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('daily_variant_event_counts').execute();
    await db.schema.dropTable('daily_variant_counts').execute();
  },
};
