import pg from 'pg';

/** How often the stand-in looks: autovacuum's default naptime is a minute; a round here lasts seconds. */
const INTERVAL_MS = 10_000;

/**
 * Whether the server runs autovacuum. Off (as on a CI server configured for repeatable tests),
 * nothing ever analyzes a table: statements the service prepared while its tables were nearly
 * empty keep their first plans (a sequential scan of participants for each flush's lookup) and
 * every round is slower than the last — a figure of the database's configuration, not of the service.
 */
export async function autovacuumIsOn(connectionString: string): Promise<boolean> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return (await client.query<{ autovacuum: string }>('show autovacuum')).rows[0]?.autovacuum === 'on';
  } finally {
    await client.end();
  }
}

/**
 * When the server's autovacuum is off, does what its ANALYZE would on the scratch database: every
 * 10 s, analyzes each table changed by more than autovacuum's default threshold (50 rows and 10 %
 * of its rows since the last analyze), on a connection of its own, while the load runs. Answers
 * how to stop it.
 */
export async function analyzeAsAutovacuumWould(connectionString: string): Promise<() => Promise<void>> {
  if (await autovacuumIsOn(connectionString)) return async () => {};
  const client = new pg.Client({ connectionString });
  await client.connect();
  client.on('error', () => {});
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      const { rows } = await client.query<{ relname: string }>(`select s.relname from pg_stat_user_tables s join pg_class c on c.oid = s.relid
        where s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)`);
      for (const { relname } of rows) await client.query(`analyze ${client.escapeIdentifier(relname)}`);
    }).catch(() => {});
  }, INTERVAL_MS);
  return async () => {
    clearInterval(timer);
    await running;
    await client.end().catch(() => {});
  };
}
