// Delivery: a bounded queue flushed through the batch ingest, one request in flight so that items
// are stored in the order they were queued (an event never overtakes its exposure). Every item
// carries an idempotency key, so resending one whose answer was lost stores nothing twice.
import { backoff, deadline, pause, quietTimeout } from './backoff';
import type { DeliveryStats, IngestItem, SdkError } from './types';
import type { components } from '../generated/api';

type BatchItemOutcome = components['schemas']['IngestBatchItem'];
type Problem = components['schemas']['Problem'];

/** Most the service accepts in one body is 1 MiB; a browser's keepalive requests, 64 KiB together. */
const MAX_BATCH_BYTES = 900 * 1024;
const MAX_KEEPALIVE_BYTES = 60 * 1024;
const encoder = new TextEncoder();

export interface DeliveryOptions {
  post(body: string, keepalive: boolean, signal?: AbortSignal): Promise<Response>;
  onError(error: SdkError): void;
  batchSize: number;
  maxQueue: number;
  flushIntervalMs: number;
  retryBaseMs: number;
  maxRetryDelayMs: number;
  /** A batch not answered within this is sent again (its items' keys make that safe). */
  requestTimeoutMs: number;
}

export interface Delivery {
  enqueue(item: IngestItem): void;
  flush(): Promise<void>;
  /** Sends what is queued with `keepalive` (the page is going away); the items stay queued until answered. */
  flushOnHide(): void;
  close(timeoutMs?: number): Promise<void>;
  stats(): DeliveryStats;
}

interface Queued {
  seq: number;
  item: IngestItem;
  json: string;
  bytes: number;
}

export function startDelivery(options: DeliveryOptions): Delivery {
  const queue: Queued[] = [];
  const waiters: Array<{ seq: number; resolve: () => void }> = [];
  const retry = backoff(options.retryBaseMs, options.maxRetryDelayMs);
  const stop = new AbortController();
  const counts = { delivered: 0, rejected: 0, dropped: 0, retries: 0 };
  let nextSeq = 0;
  let running = false;
  let due = false;
  let closing = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let unreportedDrops = 0;
  let batchBytes = MAX_BATCH_BYTES;
  let lastRetryAfter: string | null = null;

  function report(error: SdkError): void {
    try {
      options.onError(error);
    } catch {
      // The callback's failure is the application's; delivery goes on.
    }
  }

  function enqueue(item: IngestItem): void {
    if (closing) return;
    if (queue.length >= options.maxQueue) {
      counts.dropped++;
      if (unreportedDrops++ === 0) queueMicrotask(reportDrops);
      return;
    }
    const json = JSON.stringify(item);
    queue.push({ seq: nextSeq++, item, json, bytes: encoder.encode(json).length });
    if (queue.length >= options.batchSize) void run();
    else armTimer();
  }

  function reportDrops(): void {
    const count = unreportedDrops;
    unreportedDrops = 0;
    if (count > 0) report({ kind: 'dropped', count });
  }

  function armTimer(): void {
    if (timer !== undefined || queue.length === 0) return;
    timer = quietTimeout(() => {
      timer = undefined;
      due = true;
      void run();
    }, options.flushIntervalMs);
  }

  function wanted(): boolean {
    return queue.length > 0 && !stop.signal.aborted && (due || closing || waiters.length > 0 || queue.length >= options.batchSize);
  }

  async function run(): Promise<void> {
    if (running) return;
    running = true;
    try {
      while (wanted()) {
        const batch = takeBatch(queue, options.batchSize, batchBytes);
        const settled = await send(batch);
        if (!settled) {
          counts.retries++;
          await pause(retry.next(lastRetryAfter), stop.signal, waiters.length > 0 || closing);
        } else {
          retry.reset();
          // The interval has been served: what is left waits for the next one or a full batch, so
          // a steady stream goes out as one request per interval, not one per round trip.
          due = false;
        }
        answerWaiters();
      }
    } finally {
      running = false;
      answerWaiters();
      armTimer();
    }
  }

  /** Sends one batch and settles what was answered; false when something must be sent again. */
  async function send(batch: Queued[]): Promise<boolean> {
    lastRetryAfter = null;
    const timeout = deadline(options.requestTimeoutMs, stop.signal);
    try {
      return await settleAnswer(batch, await options.post(`{"items":[${batch.map((q) => q.json).join(',')}]}`, false, timeout.signal));
    } catch {
      return false;
    } finally {
      timeout.clear();
    }
  }

  async function settleAnswer(batch: Queued[], response: Response): Promise<boolean> {
    if (response.status === 200) {
      const body = (await response.json()) as { data?: BatchItemOutcome[] };
      const outcomes = body.data;
      if (!outcomes || outcomes.length !== batch.length) return false;
      const again: Queued[] = [];
      batch.forEach((queued, index) => {
        const outcome = outcomes[index]!;
        if (outcome.status === 200) counts.delivered++;
        else if (outcome.status === 503) again.push(queued);
        else reject(queued, outcome.status, outcome.error);
      });
      settle(batch, again);
      return again.length === 0;
    }
    const problem = (await response.json().catch(() => undefined)) as Problem | undefined;
    if (sendAgain(response.status)) {
      lastRetryAfter = response.headers.get('retry-after');
      return false;
    }
    if (response.status === 413 && batch.length > 1) {
      batchBytes = Math.max(1024, Math.floor(batchBytes / 2));
      return true;
    }
    // A 400 that names items stored nothing: those are dropped, the others go again.
    const named = response.status === 400 ? namedItems(problem, batch.length) : [];
    const rejected = named.length > 0 ? named.map((index) => batch[index]!) : batch;
    for (const queued of rejected) reject(queued, response.status, problem);
    settle(batch, batch.filter((queued) => !rejected.includes(queued)));
    return true;
  }

  function reject(queued: Queued, status: number, problem?: Problem): void {
    counts.rejected++;
    report({ kind: 'rejected', status, item: queued.item, ...(problem ? { problem } : {}) });
  }

  /** The batch (the head of the queue, unless close() emptied it meanwhile) leaves it, but for the items to send again. */
  function settle(batch: Queued[], again: Queued[]): void {
    if (queue[0] === batch[0]) queue.splice(0, batch.length, ...again);
  }

  function answerWaiters(): void {
    const pendingFrom = queue[0]?.seq ?? nextSeq;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.seq < pendingFrom) waiters.splice(i, 1)[0]!.resolve();
    }
  }

  function flush(): Promise<void> {
    if (queue.length === 0) return Promise.resolve();
    const promise = new Promise<void>((resolve) => waiters.push({ seq: nextSeq - 1, resolve }));
    void run();
    return promise;
  }

  function flushOnHide(): void {
    const batch = takeBatch(queue, options.batchSize, MAX_KEEPALIVE_BYTES);
    if (batch.length === 0) return;
    options.post(`{"items":[${batch.map((q) => q.json).join(',')}]}`, true).catch(() => undefined);
  }

  async function close(timeoutMs?: number): Promise<void> {
    closing = true;
    const flushed = flush();
    if (timeoutMs === undefined) await flushed;
    else {
      const gaveUp = new Promise<void>((resolve) => quietTimeout(resolve, timeoutMs));
      await Promise.race([flushed, gaveUp]);
    }
    stop.abort();
    if (timer !== undefined) clearTimeout(timer);
    reportDrops();
    if (queue.length > 0) {
      const items = queue.splice(0).map((q) => q.item);
      report({ kind: 'abandoned', items });
    }
    for (const waiter of waiters.splice(0)) waiter.resolve();
  }

  return {
    enqueue,
    flush,
    flushOnHide,
    close,
    stats: () => ({ queued: queue.length, ...counts }),
  };
}

/**
 * Statuses that store nothing and invite the same request again: 408 (the request did not arrive
 * in time), 425 (too early), 429 (rate limited), and the server's failures (5xx).
 */
function sendAgain(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/** The first items of the queue, at most `count` of them and `bytes` of body (always at least one). */
function takeBatch(queue: Queued[], count: number, bytes: number): Queued[] {
  const batch: Queued[] = [];
  let total = 12;
  for (const queued of queue) {
    if (batch.length >= count || (batch.length > 0 && total + queued.bytes + 1 > bytes)) break;
    batch.push(queued);
    total += queued.bytes + 1;
  }
  return batch;
}

/** The items a 400 names (`/body/items/3/participant`), by index. */
function namedItems(problem: Problem | undefined, size: number): number[] {
  const paths = [...(problem?.errors ?? []).map((error) => error.path), problem?.detail ?? ''];
  const indexes = new Set<number>();
  for (const path of paths) {
    for (const match of String(path).matchAll(/\/body\/items\/(\d+)/g)) {
      const index = Number(match[1]);
      if (index < size) indexes.add(index);
    }
  }
  return [...indexes].sort((a, b) => a - b);
}
