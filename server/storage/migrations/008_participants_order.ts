import type { Kysely, Migration } from 'kysely';

/**
 * A team's participants in id order, the order their list pages them in. Without it every page
 * read all the team's participants through (team_id, key) and sorted them by id: page 1 cost as
 * much as the whole list. With it a page walks the index from the start, and its cost grows with
 * its depth only, which the depth bound of pages caps at 10 000 items. On SQLite, where id is the
 * row id, the index holds nothing else; COUNT(*) of a team's participants reads it too, the
 * narrowest index there is.
 */
export const participantsOrder: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('participants_team_id').on('participants').columns(['team_id', 'id']).execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('participants_team_id').execute();
  },
};
