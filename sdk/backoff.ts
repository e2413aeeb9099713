// Waits between retries: exponential, capped, with "equal jitter" (half fixed, half random) so
// that many clients cut off by one outage do not come back in step; and the timers and deadlines
// the SDK waits with.

export interface Backoff {
  /** The wait before the next attempt, in ms; a server's Retry-After (seconds) wins when it is longer. */
  next(retryAfter?: string | null): number;
  reset(): void;
}

export function backoff(baseMs: number, maxMs: number, random: () => number = Math.random): Backoff {
  let attempt = 0;
  return {
    next(retryAfter) {
      const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
      attempt++;
      const jittered = ceiling / 2 + random() * (ceiling / 2);
      const told = retryAfterMs(retryAfter);
      return told === undefined ? jittered : Math.max(told, jittered);
    },
    reset() {
      attempt = 0;
    },
  };
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110), in ms from now. */
export function retryAfterMs(value: string | null | undefined): number | undefined {
  if (value == null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** A timer that does not keep a Node process alive (browsers have no unref). */
export function quietTimeout(callback: () => void, ms: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(callback, ms);
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/** Resolves after `ms`, or at once when `signal` aborts; keeps a Node process alive meanwhile when `keepAlive`. */
export function pause(ms: number, signal: AbortSignal, keepAlive = false): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = keepAlive ? setTimeout(done, ms) : quietTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** A signal that aborts after `ms` or when `parent` does; `clear()` once the request is done (it aborts too, releasing the connection). */
export function deadline(ms: number, parent?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  const timer = quietTimeout(abort, ms);
  parent?.addEventListener('abort', abort, { once: true });
  if (parent?.aborted) abort();
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', abort);
      controller.abort();
    },
  };
}
