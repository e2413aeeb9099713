import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { ASSUMPTION_CHANGED } from './sql-states';
import { Pipeline } from './postgres-pipeline';

/** node-postgres's own conversion of a query value to the text it sends (arrays, dates, JSON…): its module exports it, its types do not. */
const { prepareValue } = (pg as unknown as { utils: { prepareValue(value: unknown): string | null } }).utils;

/**
 * PostgreSQL parses and plans an unnamed statement at every run; for the hot paths' statements
 * (an ingest flush's CTE of six writes, say) that is more of the database's CPU than running
 * them. Statements with parameters are sent as named statements instead, one name per SQL text,
 * which node-postgres prepares once per connection. Like SQLite's (sqlite-statements.ts), the
 * texts are query shapes, not values, and few; past `max` of them the rest go unnamed.
 *
 * A query whose only value is a Pipeline (postgres-pipeline.ts) sends its statements as one
 * message: the simple protocol, which carries several statements but no parameters. Each
 * statement with parameters is prepared with SQL's PREPARE the first time the connection sends
 * it, and run as EXECUTE with its values written as literals — node-postgres's text for each
 * value, quoted by libpq's rules — so it keeps its plan like any named one.
 */
export function preparingStatements(pool: pg.Pool, max = 1000): PostgresPool {
  const names = new Map<string, number>();
  const numberOf = (text: string): number | undefined => {
    let number = names.get(text);
    if (number === undefined && names.size < max) names.set(text, (number = names.size + 1));
    return number;
  };
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let preparing = clients.get(client);
      if (!preparing) {
        const pipelines = new PipelineSender(client, numberOf);
        preparing = {
          // Kysely sends every query as (text, values); without values (begin, commit, DDL) the simple protocol, as before.
          query: ((text: string, values: unknown[]) => {
            if (values.length === 1 && values[0] instanceof Pipeline) return pipelines.send(values[0]);
            const number = values.length > 0 ? numberOf(text) : undefined;
            return number ? client.query({ name: `statement_${number}`, text, values }) : client.query(text, values);
          }) as unknown as PostgresPoolClient['query'],
          // A connection that may hold prepared statements it does not know of is closed, not reused.
          release: () => client.release(pipelines.uncertain || undefined),
        };
        clients.set(client, preparing);
      }
      return preparing;
    },
    end: () => pool.end(),
  };
}

/** One connection's pipelines, and which of their statements it has prepared. */
class PipelineSender {
  private readonly prepared = new Set<string>();
  /** A message with PREPAREs failed: PREPARE is not undone by a rollback, so which of them ran is unknown. */
  uncertain = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly numberOf: (text: string) => number | undefined,
  ) {}

  async send(pipeline: Pipeline): Promise<{ rows: pg.QueryResult[] }> {
    // PREPAREs before the first statement with values (after those that open or resume a
    // transaction): a statement that fails after them leaves every one of them prepared.
    const prepares: string[] = [];
    const statements: string[] = [];
    // Where each query's answer is among the message's statements'.
    const answers: number[] = [];
    for (const query of pipeline.queries) {
      if (query.parameters.length === 0) {
        answers.push(statements.push(query.sql) - 1);
        continue;
      }
      const number = this.numberOf(query.sql);
      const name = number ? `pipelined_${number}` : `pipelined_once_${prepares.length}`;
      if (!this.prepared.has(name)) {
        prepares.push(`prepare ${name} as ${query.sql}\n`);
        if (number) this.prepared.add(name);
      }
      answers.push(statements.push(`execute ${name}(${query.parameters.map(literal).join(', ')})`) - 1);
      if (!number) statements.push(`deallocate ${name}`);
    }
    try {
      const leading = Math.max(0, pipeline.queries.findIndex((query) => query.parameters.length > 0));
      const message = [...statements.slice(0, leading), ...prepares, ...statements.slice(leading)];
      const answered: pg.QueryResult | pg.QueryResult[] = await this.client.query(message.join(';\n'));
      const results = Array.isArray(answered) ? answered : [answered];
      return { rows: answers.map((index) => results[index < leading ? index : index + prepares.length]!) };
    } catch (error) {
      // A flush's check of what it assumed fails after the PREPAREs, which all ran.
      if (prepares.length > 0 && (error as { code?: string }).code !== ASSUMPTION_CHANGED) this.uncertain = true;
      throw error;
    }
  }
}

/** libpq's quoting (PQescapeLiteral, node-postgres's escapeLiteral), by regular expressions: a flush's values run to many kilobytes. */
function literal(value: unknown): string {
  const text = Array.isArray(value) ? arrayText(value) : prepareValue(value);
  if (text === null) return 'null';
  const quoted = text.includes("'") ? text.replace(/'/g, "''") : text;
  return text.includes('\\') ? `E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

const ARRAY_ELEMENT_ESCAPES = /[\\"]/g;

/**
 * An array of numbers, strings and nulls — what a flush binds — as the array literal
 * node-postgres writes for it, without its two regular expressions and a quoted copy per element
 * (a twelfth of a batch's CPU): numbers bare, strings quoted with `\` and `"` escaped. Any other
 * element: node-postgres's text for the whole array.
 */
function arrayText(values: unknown[]): string | null {
  let text = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) text += ',';
    if (value === null || value === undefined) text += 'NULL';
    else if (typeof value === 'number') text += String(value);
    else if (typeof value === 'string') text += `"${value.replace(ARRAY_ELEMENT_ESCAPES, '\\$&')}"`;
    else return prepareValue(values);
  }
  return text + '}';
}
