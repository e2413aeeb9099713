import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { WebhookSettings } from '../settings/settings';
import type { Db } from '../storage/schema';
import { iso, now } from '../storage/values';
import * as deliveries from './deliveries-store';
import { claimLease, disableEndpoint, endpointById, releaseLease, type EndpointRow } from './endpoints-store';
import { send, type AttemptOutcome } from './send';

/** Endpoints whose queues one process works on at once. */
const CONCURRENT_ENDPOINTS = 16;
/** Deliveries of an endpoint read at once: the endpoint (URL, secret, enabled) is read again before each such batch. */
const BATCH = 20;
/** Delivered and failed deliveries are kept this long after they were queued. */
const KEPT_MS = 30 * 86_400_000;
const SWEEP_EVERY_MS = 3_600_000;

export interface WebhookDelivery {
  /** Stops looking for work and waits for the attempts in flight. */
  stop(): Promise<void>;
}

/**
 * The delivery worker, one per server process. Every `pollMs` it looks for enabled endpoints with
 * a delivery due and no live lease, and works on each one's queue: it takes the endpoint's lease
 * (a row lease, compare-and-set on `lease_until`, three times longer than an attempt may take, and
 * renewed before an attempt whenever less than two attempts' time is left of it), then reads the
 * endpoint and the oldest BATCH pending deliveries, sends them one after the other, and reads the
 * next batch, until a batch comes short (what is queued meanwhile waits for the next look) or a
 * delivery waits for a retry. So deliveries of an
 * endpoint leave in order, one at a time, from one process — on PostgreSQL with several processes
 * too. Consecutive successes are recorded together, in one write before the next failure is
 * recorded or the batch ends (so a queue of fast receivers costs about one write per batch, not
 * one per delivery). A process that dies holding a lease leaves its unrecorded deliveries pending;
 * the next process takes the lease when it expires and sends them again (at least once).
 */
export function startWebhookDelivery(db: Db, settings: WebhookSettings, logger: Logger): WebhookDelivery {
  const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
  const leaseMs = settings.timeoutMs * 3 + 1000;
  const working = new Map<number, Promise<void>>();
  let stopped = false;
  let looking = false;
  let lastSweep = 0;

  /** Takes or renews the lease; answers until when it is held (ms since the epoch), or null when another process holds it. */
  async function lease(endpointId: number): Promise<number | null> {
    const until = Date.now() + leaseMs;
    return (await claimLease(db, endpointId, owner, now(), new Date(until).toISOString())) ? until : null;
  }

  async function work(endpointId: number): Promise<void> {
    let leaseEnds = await lease(endpointId);
    if (leaseEnds === null) return;
    try {
      while (!stopped) {
        const endpoint = await endpointById(db, endpointId);
        if (!endpoint || !endpoint.enabled) return;
        const batch = await deliveries.queueHead(db, endpointId, BATCH);
        if (batch.length === 0) return;
        const successes: Success[] = [];
        try {
          for (const head of batch) {
            if (stopped || (head.next_attempt_at !== null && iso(head.next_attempt_at) > now())) return;
            if (leaseEnds - Date.now() < settings.timeoutMs * 2 && (leaseEnds = await lease(endpointId)) === null) return;
            const startedAt = now();
            const outcome = await send({ url: endpoint.url, secrets: secretsOf(endpoint), messageId: `msg_${head.audit_entry_id}`, body: head.body, timeoutMs: settings.timeoutMs, allowPrivate: settings.allowPrivateAddresses });
            if (delivered(outcome.status)) {
              successes.push({ id: head.id, status: outcome.status, startedAt });
              continue;
            }
            await recordSuccesses(successes.splice(0));
            if (!(await recordFailure(endpoint, head, outcome, startedAt))) return;
          }
        } finally {
          await recordSuccesses(successes);
        }
        if (batch.length < BATCH) return;
      }
    } finally {
      await releaseLease(db, endpointId, owner).catch((error: unknown) => logger.warn({ err: error, endpointId }, 'releasing a webhook lease failed; it expires by itself'));
    }
  }

  /** Records deliveries answered 2xx since the last write: one write per status answered. */
  async function recordSuccesses(successes: Success[]): Promise<void> {
    if (successes.length === 0) return;
    const at = now();
    for (const status of new Set(successes.map((success) => success.status))) {
      const same = successes.filter((success) => success.status === status);
      await deliveries.markDelivered(db, same.map((success) => success.id), { status, firstAttemptAt: same[0]!.startedAt, at });
    }
  }

  /** Records an attempt that did not deliver; answers whether the queue may go on to its next delivery. */
  async function recordFailure(endpoint: EndpointRow, head: deliveries.DeliveryRow, outcome: AttemptOutcome, startedAt: string): Promise<boolean> {
    const at = now();
    const attempts = head.attempts + 1;
    const firstAttemptAt = head.first_attempt_at === null ? startedAt : iso(head.first_attempt_at);
    const attempt = { attempts, last_status: outcome.status, last_error: outcome.error, last_attempt_at: at, first_attempt_at: firstAttemptAt };
    const { status } = outcome;
    if (status === 410) {
      await deliveries.updateDelivery(db, head.id, { ...attempt, status: 'failed', next_attempt_at: null });
      await disableEndpoint(db, endpoint.id, `The receiver answered 410 Gone at ${at}.`, at);
      logger.warn({ endpointId: endpoint.id }, 'a webhook receiver answered 410 Gone: its endpoint is disabled');
      return false;
    }
    if (status !== null && status >= 400 && status < 500 && status !== 429) {
      await deliveries.updateDelivery(db, head.id, { ...attempt, status: 'failed', next_attempt_at: null });
      return true;
    }
    if (Date.parse(at) - Date.parse(firstAttemptAt) >= settings.retryWindowMs) {
      await deliveries.updateDelivery(db, head.id, { ...attempt, status: 'failed', next_attempt_at: null, last_error: `gave up after ${attempts} attempts: ${outcome.error}`.slice(0, 500) });
      return true;
    }
    const next = new Date(Date.parse(at) + backoffMs(attempts, settings)).toISOString();
    await deliveries.updateDelivery(db, head.id, { ...attempt, next_attempt_at: next });
    return false;
  }

  async function look(): Promise<void> {
    if (looking || stopped) return;
    looking = true;
    try {
      if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
        lastSweep = Date.now();
        await deliveries.deleteDoneBefore(db, new Date(Date.now() - KEPT_MS).toISOString());
      }
      const due = await deliveries.dueEndpoints(db, now(), CONCURRENT_ENDPOINTS * 2);
      for (const endpointId of due) {
        if (working.has(endpointId) || working.size >= CONCURRENT_ENDPOINTS) continue;
        const job = work(endpointId)
          .catch((error: unknown) => logger.warn({ err: error, endpointId }, 'delivering webhooks failed; the next look tries again'))
          .finally(() => working.delete(endpointId));
        working.set(endpointId, job);
      }
    } catch (error) {
      logger.warn({ err: error }, 'looking for webhook deliveries failed; the next look tries again');
    } finally {
      looking = false;
    }
  }

  const timer = setInterval(() => void look(), settings.pollMs);
  timer.unref();
  void look();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all(working.values());
    },
  };
}

/** The endpoint's secret, and the one before it while that still signs. */
function secretsOf(endpoint: EndpointRow): string[] {
  const until = endpoint.previous_secret_until;
  return endpoint.previous_secret !== null && until !== null && iso(until) > now() ? [endpoint.secret, endpoint.previous_secret] : [endpoint.secret];
}

interface Success {
  id: number;
  status: number;
  startedAt: string;
}

function delivered(status: number | null): status is number {
  return status !== null && status >= 200 && status < 300;
}

/** The wait after the n-th failed attempt: base × 2^(n-1), at most the maximum, of which a random half (jitter spreads receivers' recoveries). */
export function backoffMs(failedAttempts: number, settings: Pick<WebhookSettings, 'retryBaseMs' | 'retryMaxMs'>): number {
  const ceiling = Math.min(settings.retryBaseMs * 2 ** Math.min(failedAttempts - 1, 30), settings.retryMaxMs);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
