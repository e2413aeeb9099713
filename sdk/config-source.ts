// The team config, kept fresh: read from the config stream (Server-Sent Events over fetch — Node
// 20 has no EventSource, and fetch lets us send the ingest key as a header); while the stream is
// down, polled with If-None-Match (304: nothing changed), and the stream reconnected with backoff.
// What the service sends is not trusted: a config is read up to a bound, and used only when it
// has the contract's shape; otherwise the last good one stays.
import { createParser } from 'eventsource-parser';
import { backoff, deadline, pause, quietTimeout } from './backoff';
import { configProblem } from './config-check';
import type { Config, SdkError } from './types';

/** The server sends a comment every 15 s; a stream silent for longer than this is taken as dead. */
const STREAM_IDLE_MS = 45_000;
/** One config, polled or one message of the stream: more is not read (the request is aborted). */
const MAX_CONFIG_CHARACTERS = 16 * 1024 * 1024;

export interface ConfigSourceOptions {
  /** `…/api/teams/{team}/config`; the stream is at `…/config/stream`. */
  url: string;
  authorization: string;
  fetch: typeof fetch;
  stream: boolean;
  pollIntervalMs: number;
  requestTimeoutMs: number;
  retryBaseMs: number;
  maxRetryDelayMs: number;
  onConfig(config: Config): void;
  /** The config held is known current: a poll answered 304, or the stream connected (it sends any newer one). */
  onCurrent(): void;
  onError(error: SdkError): void;
}

export interface ConfigSource {
  stop(): void;
}

export function startConfigSource(options: ConfigSourceOptions): ConfigSource {
  const stopped = new AbortController();
  const reconnect = backoff(options.retryBaseMs, options.maxRetryDelayMs);
  let etag: string | null = null;
  let serverRetryMs = 0;

  function apply(body: string, tag: string | null): boolean {
    let parsed: { data?: unknown };
    try {
      parsed = JSON.parse(body) as { data?: unknown };
    } catch {
      options.onError({ kind: 'config', message: 'the config was not JSON; the last good one is kept' });
      return false;
    }
    const problem = configProblem(parsed?.data);
    if (problem) {
      options.onError({ kind: 'config', message: `the config is not usable (${problem.replace(/^\//, 'data/')}); the last good one is kept` });
      return false;
    }
    etag = tag;
    options.onConfig(parsed.data as Config);
    return true;
  }

  async function poll(): Promise<void> {
    const timeout = deadline(options.requestTimeoutMs, stopped.signal);
    try {
      const response = await options.fetch(options.url, {
        headers: { Authorization: options.authorization, ...(etag ? { 'If-None-Match': etag } : {}) },
        signal: timeout.signal,
      });
      if (response.status !== 200) {
        await response.body?.cancel().catch(() => undefined);
        if (response.status === 304) options.onCurrent();
        else options.onError({ kind: 'config', status: response.status, message: `GET config answered ${response.status}` });
        return;
      }
      const text = await textUpTo(response, MAX_CONFIG_CHARACTERS);
      if (text !== undefined) apply(text, response.headers.get('etag'));
      else options.onError({ kind: 'config', message: `GET config answered more than ${MAX_CONFIG_CHARACTERS} characters; the rest was not read, and the last good config is kept` });
    } catch (error) {
      if (!stopped.signal.aborted) options.onError({ kind: 'config', message: `GET config failed: ${String(error)}` });
    } finally {
      timeout.clear();
    }
  }

  /** Reads the stream until it ends; the Retry-After of a refusal, if any. */
  async function readStream(): Promise<string | null> {
    const connection = new AbortController();
    const abort = () => connection.abort();
    stopped.signal.addEventListener('abort', abort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const watch = () => {
      if (idle !== undefined) clearTimeout(idle);
      idle = quietTimeout(abort, STREAM_IDLE_MS);
    };
    watch();
    try {
      const response = await options.fetch(`${options.url}/stream`, {
        headers: { Authorization: options.authorization, Accept: 'text/event-stream', ...(etag ? { 'Last-Event-ID': etag } : {}) },
        signal: connection.signal,
      });
      if (response.status !== 200 || !response.body || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        await response.body?.cancel().catch(() => undefined);
        options.onError({ kind: 'config', status: response.status, message: `the config stream answered ${response.status}` });
        return response.headers.get('retry-after');
      }
      if (etag !== null) options.onCurrent();
      const parser = createParser({
        onEvent(message) {
          if (message.event === 'config' && apply(message.data, message.id ?? null)) reconnect.reset();
        },
        onRetry(ms) {
          serverRetryMs = ms;
        },
        onError(error) {
          if (error.type === 'max-buffer-size-exceeded') abort();
        },
        maxBufferSize: MAX_CONFIG_CHARACTERS,
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        watch();
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } catch (error) {
      if (!stopped.signal.aborted) options.onError({ kind: 'config', message: `the config stream failed: ${String(error)}` });
    } finally {
      if (idle !== undefined) clearTimeout(idle);
      stopped.signal.removeEventListener('abort', abort);
      connection.abort();
    }
    return null;
  }

  /** Waits `ms`, polling every pollIntervalMs meanwhile. */
  async function waitPolling(ms: number): Promise<void> {
    let remaining = ms;
    while (remaining > 0 && !stopped.signal.aborted) {
      const step = Math.min(remaining, options.pollIntervalMs);
      await pause(step, stopped.signal);
      remaining -= step;
      if (remaining > 0) await poll();
    }
  }

  async function run(): Promise<void> {
    while (!stopped.signal.aborted) {
      if (!options.stream) {
        await poll();
        await pause(options.pollIntervalMs, stopped.signal);
        continue;
      }
      const retryAfter = await readStream();
      if (stopped.signal.aborted) break;
      await poll();
      await waitPolling(Math.max(serverRetryMs, reconnect.next(retryAfter)));
    }
  }

  void run();
  return { stop: () => stopped.abort() };
}

/** The body as text, or undefined as soon as it passes `max` characters (the rest is not read: the body is cancelled). */
async function textUpTo(response: Response, max: number): Promise<string | undefined> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    const part = done ? decoder.decode() : decoder.decode(value, { stream: true });
    length += part.length;
    if (length > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    parts.push(part);
    if (done) return parts.join('');
  }
}
