import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../engine';

/** A foreign key the ingest writes rows under: the child's columns name the parent's unique columns. */
interface IngestKey {
  name: string;
  child: string;
  columns: string[];
  parent: string;
  parentColumns: string[];
}

/** Every foreign key a flush checks per row it writes: 13 checks per new participant in 3 experiments, 14 with an idempotency key. */
export const INGEST_KEYS: IngestKey[] = [
  { name: 'participants_team_id_fkey', child: 'participants', columns: ['team_id'], parent: 'teams', parentColumns: ['id'] },
  { name: 'ingest_keys_team_id_fkey', child: 'ingest_keys', columns: ['team_id'], parent: 'teams', parentColumns: ['id'] },
  { name: 'enrolments_participant_fkey', child: 'enrolments', columns: ['team_id', 'participant_id'], parent: 'participants', parentColumns: ['team_id', 'id'] },
  {
    name: 'enrolments_variant_fkey',
    child: 'enrolments',
    columns: ['team_id', 'experiment_id', 'variant_id'],
    parent: 'variants',
    parentColumns: ['team_id', 'experiment_id', 'id'],
  },
  {
    name: 'conversions_enrolment_fkey',
    child: 'conversions',
    columns: ['team_id', 'participant_id', 'experiment_id'],
    parent: 'enrolments',
    parentColumns: ['team_id', 'participant_id', 'experiment_id'],
  },
  { name: 'conversions_event_fkey', child: 'conversions', columns: ['team_id', 'event_id'], parent: 'events', parentColumns: ['team_id', 'id'] },
];

/**
 * PostgreSQL: the foreign keys a flush writes rows under are checked once per statement, over the
 * set of rows it inserted, in place of once per row. PostgreSQL runs a foreign key's check as its
 * own query for every inserted row: 13 a new participant in 3 experiments, nearly half of a
 * batch's database CPU (bench/results/2026-11-25-postgres-foreign-keys-once.md). Each key keeps its rule, its name and its error:
 * - A statement that inserts children probes the parent's unique key once per distinct key its
 *   rows name, in key order, locking each parent `for key share` as the per-row checks did, and
 *   refuses the statement with foreign_key_violation (23503) and the key's name unless every
 *   parent was found. A parent deleted by a transaction not yet
 *   committed is waited for and then missing; a parent locked here makes its delete wait for this
 *   commit, and then the delete's cascade sees these children.
 * - Deleting parents deletes their children in one statement (`on delete cascade`), planned for
 *   the number of parents deleted.
 * - Keys never change: an update that changes a child's or a parent's key columns is refused
 *   (the per-row keys allowed a change to another existing parent, which nothing does).
 * Every other foreign key stays PostgreSQL's own: rows under them are written once a day or by
 * configuration, not per ingested item. SQLite checks its foreign keys in the process: it keeps
 * them.
 */
export function setBasedKeys(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql.raw(REFUSE_KEY_CHANGE).execute(db);
      for (const key of INGEST_KEYS) {
        await sql.raw(`alter table ${key.child} drop constraint ${key.name}`).execute(db);
        for (const statement of setBasedKey(key)) await sql.raw(statement).execute(db);
      }
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      for (const key of INGEST_KEYS) {
        for (const name of [`${key.name}_insert`, `${key.name}_child_key`]) await sql.raw(`drop trigger ${name} on ${key.child}`).execute(db);
        for (const name of [`${key.name}_delete`, `${key.name}_parent_key`]) await sql.raw(`drop trigger ${name} on ${key.parent}`).execute(db);
        await sql.raw(`drop function ${key.name}_check(), ${key.name}_cascade()`).execute(db);
        await sql
          .raw(
            `alter table ${key.child} add constraint ${key.name} foreign key (${key.columns.join(', ')})
              references ${key.parent} (${key.parentColumns.join(', ')}) on delete cascade`,
          )
          .execute(db);
      }
      await sql.raw('drop function refuse_key_change()').execute(db);
    },
  };
}

const REFUSE_KEY_CHANGE = `create function refuse_key_change() returns trigger language plpgsql as $$
begin
  raise exception 'the key columns of a row of "%" never change (foreign key constraint "%")', tg_table_name, tg_argv[0]
    using errcode = 'foreign_key_violation', constraint = tg_argv[0], table = tg_table_name, schema = tg_table_schema;
end $$`;

const list = (prefix: string, names: string[]) => names.map((column) => `${prefix}.${column}`).join(', ');
const matching = (a: string, aColumns: string[], b: string, bColumns: string[]) => aColumns.map((column, i) => `${a}.${column} = ${b}.${bColumns[i]}`).join(' and ');

/**
 * Which parents a key's check locks `for key share`: every one it finds, or (migration 016) those
 * its own transaction did not write, which no other transaction can delete before it commits.
 */
export type ParentLocks = 'every parent' | 'parents of other transactions';

/** The function a statement trigger runs to check `key` over the rows its statement inserted. */
export function keyCheck({ name, child, columns, parent, parentColumns }: IngestKey, locks: ParentLocks): string {
  const probe =
    locks === 'every parent'
      ? `left join lateral (select true as present from ${parent} p where ${matching('p', parentColumns, 'n', columns)} for key share) p on true
        where p.present is null`
      : // A parent of another transaction counts once it is locked: one deleted meanwhile is missing.
        `left join lateral (select p.xmin = pg_current_xact_id()::xid as own from ${parent} p where ${matching('p', parentColumns, 'n', columns)} limit 1) p on true
        left join lateral (select true as locked from ${parent} q where not p.own and ${matching('q', parentColumns, 'n', columns)} for key share) q on true
        where p.own is null or (not p.own and q.locked is null)`;
  // A probe of the parent's unique key for each distinct child key, in key order: the plan is
  // made once per connection and must not become a scan of the parent as it grows.
  return `create or replace function ${name}_check() returns trigger language plpgsql as $$
    declare
      missing bigint;
    begin
      select count(*) into missing
        from (select distinct ${list('n', columns)} from inserted n order by ${list('n', columns)}) n
        ${probe};
      if missing > 0 then
        raise exception 'insert or update on table "${child}" violates foreign key constraint "${name}"'
          using errcode = 'foreign_key_violation', constraint = '${name}', table = '${child}', schema = tg_table_schema,
            detail = format('%s of the rows of "${parent}" its rows name are not present.', missing);
      end if;
      return null;
    end $$`;
}

function setBasedKey(key: IngestKey): string[] {
  const { name, child, columns, parent, parentColumns } = key;
  const changed = (names: string[]) => `(${list('old', names)}) is distinct from (${list('new', names)})`;
  return [
    keyCheck(key, 'every parent'),
    // Planned at each delete, for the number of parents it deletes: one participant, or a team's all.
    `create function ${name}_cascade() returns trigger language plpgsql as $$
    begin
      execute 'delete from ${child} c using deleted d where ${matching('c', columns, 'd', parentColumns)}';
      return null;
    end $$`,
    `create trigger ${name}_insert after insert on ${child} referencing new table as inserted
      for each statement execute function ${name}_check()`,
    `create trigger ${name}_delete after delete on ${parent} referencing old table as deleted
      for each statement execute function ${name}_cascade()`,
    `create trigger ${name}_child_key before update of ${columns.join(', ')} on ${child}
      for each row when (${changed(columns)}) execute function refuse_key_change('${name}')`,
    `create trigger ${name}_parent_key before update of ${parentColumns.join(', ')} on ${parent}
      for each row when (${changed(parentColumns)}) execute function refuse_key_change('${name}')`,
  ];
}
