import pg from 'pg';

/**
 * A pool of one connection to `url`, for a test's own statements. pg-pool's end() resolves before
 * its connections have closed, so a scratch database dropped right after can terminate one that
 * is still closing; like the server's pool (storage/database.ts), every connection keeps an error
 * listener, or that error would be uncaught and fail the whole run.
 */
export function poolOfOne(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
