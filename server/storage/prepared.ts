import type { Compilable, CompiledQuery } from 'kysely';
import type { Db } from './database';

/** Where a run's value goes: a parameter of the compiled query that reads it from the run's arguments. */
class Argument<Args> {
  constructor(readonly read: (args: Args) => unknown) {}
}

/** In a prepared query's builder: the value `read` takes from each run's arguments. */
export type Bind<Args> = <T>(read: (args: Args) => T) => T;

const bind = <Args>(read: (args: Args) => unknown) => new Argument(read) as never;

/**
 * A query of the hot paths (ingest, authentication), built and compiled once per storage and
 * shape — then each run only binds its arguments. Building and compiling a query with Kysely
 * costs more CPU than SQLite takes to run a small one; the builder stays the one place the SQL
 * is written, so both engines still get their own dialect. `shape` tells apart the variants a
 * builder makes, e.g. the number of rows of a multi-row insert.
 */
export function prepared<Args, Row, Shape extends string | number = ''>(build: (db: Db, bind: Bind<Args>, shape: Shape) => Compilable<Row>) {
  // Per adapter, i.e. per Kysely instance and dialect; transactions and connections share it.
  const compiled = new WeakMap<object, Map<Shape, CompiledQuery<Row>>>();

  function compile(db: Db, shape: Shape): CompiledQuery<Row> {
    const adapter = db.getExecutor().adapter;
    let byShape = compiled.get(adapter);
    if (!byShape) compiled.set(adapter, (byShape = new Map()));
    let query = byShape.get(shape);
    if (!query) byShape.set(shape, (query = build(db, bind, shape).compile()));
    return query;
  }

  return async (db: Db, args: Args, shape = '' as Shape): Promise<Row[]> => {
    const query = compile(db, shape);
    const parameters = query.parameters.map((value) => (value instanceof Argument ? (value as Argument<Args>).read(args) : value));
    const result = await db.executeQuery<Row>({ ...query, parameters });
    return result.rows;
  };
}
