import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../engine';

/**
 * A webhook endpoint's previous secret, kept after a rotation until `previous_secret_until`:
 * deliveries are signed with both meanwhile, so a receiver can switch to the new secret when it is
 * ready. Null when there is none (never rotated, or rotated with no overlap).
 */
export function webhookSecretOverlap(engine: Engine): Migration {
  const timestamp = engine === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('webhook_endpoints').addColumn('previous_secret', 'text').execute();
      await db.schema.alterTable('webhook_endpoints').addColumn('previous_secret_until', timestamp).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('webhook_endpoints').dropColumn('previous_secret_until').execute();
      await db.schema.alterTable('webhook_endpoints').dropColumn('previous_secret').execute();
    },
  };
}
