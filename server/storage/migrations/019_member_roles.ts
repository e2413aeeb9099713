import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * A role per membership — `viewer` reads, `editor` also changes a team's resources, `admin` also
 * its members, roles, webhooks and credentials — and tokens that may only read. Every membership
 * stored before this one could do everything, so it becomes `admin`; every token stays as it was.
 */
export function memberRoles(engine: Engine): Migration {
  const boolean = engine === 'postgres' ? 'boolean' : 'integer';
  const no = engine === 'postgres' ? sql`false` : sql`0`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('memberships')
        .addColumn('role', 'text', (col) => col.notNull().defaultTo('admin').check(sql`role in ('viewer', 'editor', 'admin')`))
        .execute();
      await db.schema
        .alterTable('api_tokens')
        .addColumn('read_only', boolean, (col) => col.notNull().defaultTo(no))
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('api_tokens').dropColumn('read_only').execute();
      await db.schema.alterTable('memberships').dropColumn('role').execute();
    },
  };
}
