import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';
import { INGEST_KEYS, keyCheck } from './014_set_based_keys';

/**
 * PostgreSQL: the statement-level checks of migration 014 lock a parent `for key share` only when
 * another transaction wrote the version they find. A parent the checking transaction inserted
 * (a participant, the enrolments its conversions name) or updated (a variant's counter) is one no
 * other transaction can delete before it commits — invisible to them, or held by its own update —
 * so locking it kept nothing safe: it logged a record per row, four per new participant in three
 * experiments. A parent another transaction is deleting is still waited for and then missing.
 */
export function ownParentsUnlocked(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      for (const key of INGEST_KEYS) await sql.raw(keyCheck(key, 'parents of other transactions')).execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      for (const key of INGEST_KEYS) await sql.raw(keyCheck(key, 'every parent')).execute(db);
    },
  };
}
