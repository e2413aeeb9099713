import pg from 'pg';
import { CONFIG_CHANNEL, notifyWithin, TeamListeners, type TeamSignals } from './team-signals';

/** Waits between attempts to get the listening connection back: doubling from the first to the last. */
const FIRST_RETRY_MS = 100;
const LAST_RETRY_MS = 5000;
/** The listening connection's `application_name`, as pg_stat_activity shows it. */
export const LISTENER_NAME = 'experimentation-config-listener';

/**
 * PostgreSQL: one connection of the process LISTENs on the config channel, from the first
 * subscriber on. When it is lost (a restart, a failover, pg_terminate_backend) it is opened again
 * with backoff; once it is back every listener is called, since changes may have been announced
 * while nobody listened.
 */
export function postgresSignals(connectionString: string): TeamSignals {
  const listeners = new TeamListeners();
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;
  let closed = false;

  function start(): void {
    if (closed || client || retryTimer) return;
    const connecting = new pg.Client({ connectionString, application_name: LISTENER_NAME, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    client = connecting;
    let lost = false;
    const lose = () => {
      if (lost) return;
      lost = true;
      if (client === connecting) client = undefined;
      connecting.end().catch(() => {});
      if (closed) return;
      const wait = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** failures++);
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        start();
      }, wait * (0.5 + Math.random() / 2));
      retryTimer.unref();
    };
    connecting.on('error', lose);
    connecting.on('end', lose);
    connecting.on('notification', ({ channel, payload }) => {
      const teamId = Number(payload);
      if (channel === CONFIG_CHANNEL && Number.isSafeInteger(teamId)) listeners.call(teamId);
    });
    connecting
      .connect()
      .then(() => connecting.query(`listen ${CONFIG_CHANNEL}`))
      .then(() => {
        if (lost) return;
        failures = 0;
        listeners.callAll();
      }, lose);
  }

  return {
    announceWithin: async (trx, teamId) => {
      await notifyWithin(trx, teamId);
    },
    announceCommitted: () => {},
    subscribe(teamId, listener) {
      start();
      return listeners.add(teamId, listener);
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      await client?.end().catch(() => {});
    },
  };
}

