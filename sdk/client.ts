// createClient's body: the config source feeds the decisions, and decisions and track() feed
// the delivery queue.
import { startConfigSource } from './config-source';
import { decideExperiment, decideFeature, indexConfig, type IndexedConfig } from './decisions';
import { startDelivery } from './delivery';
import { rememberExposures } from './exposures';
import { newIdempotencyKey } from './ids';
import type { Attributes, Client, ClientOptions, Config, ConfigFeature, ConfigStatus, FeatureDetails, IngestItem, SdkError } from './types';

const DEFAULTS = {
  stream: true,
  pollIntervalMs: 30_000,
  flushIntervalMs: 1_000,
  batchSize: 500,
  maxQueue: 10_000,
  retryBaseMs: 250,
  maxRetryDelayMs: 30_000,
  maxExposures: 100_000,
  requestTimeoutMs: 30_000,
};

export function startClient(options: ClientOptions): Client {
  const settings = { ...DEFAULTS, ...definedOnly(options) };
  if (!Number.isInteger(settings.batchSize) || settings.batchSize < 1 || settings.batchSize > 500) throw new RangeError('batchSize must be an integer from 1 to 500');
  if (!Number.isInteger(settings.maxQueue) || settings.maxQueue < 1) throw new RangeError('maxQueue must be a positive integer');
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const base = `${options.baseUrl.replace(/\/+$/, '')}/api/teams/${encodeURIComponent(String(options.team))}`;
  const authorization = `Bearer ${options.ingestKey}`;
  const onError = (error: SdkError) => {
    try {
      options.onError?.(error);
    } catch {
      // The application's callback failing must not stop delivery or the config.
    }
  };

  let current: IndexedConfig | null = null;
  let status: ConfigStatus | null = null;
  const setStatus = (next: ConfigStatus) => {
    if (status === next) return;
    status = next;
    try {
      options.onStatus?.(next);
    } catch {
      // As onError: the application's callback failing must not stop the config.
    }
  };
  const listeners = new Set<(config: Config) => void>();
  let markReady: () => void = () => undefined;
  let refuse: (reason: Error) => void = () => undefined;
  const readiness = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    refuse = reject;
  });
  // A rejection nobody awaits must not end a Node process: ready() is optional.
  readiness.catch(() => undefined);

  const delivery = startDelivery({
    post: (body, keepalive, signal) =>
      doFetch(`${base}/ingest/batch`, { method: 'POST', headers: { Authorization: authorization, 'Content-Type': 'application/json' }, body, keepalive, signal }),
    onError,
    batchSize: settings.batchSize,
    maxQueue: settings.maxQueue,
    flushIntervalMs: settings.flushIntervalMs,
    retryBaseMs: settings.retryBaseMs,
    maxRetryDelayMs: settings.maxRetryDelayMs,
    requestTimeoutMs: settings.requestTimeoutMs,
  });
  const source = startConfigSource({
    url: `${base}/config`,
    authorization,
    fetch: doFetch,
    stream: settings.stream,
    pollIntervalMs: settings.pollIntervalMs,
    requestTimeoutMs: settings.requestTimeoutMs,
    retryBaseMs: settings.retryBaseMs,
    maxRetryDelayMs: settings.maxRetryDelayMs,
    onCurrent: () => setStatus('current'),
    onConfig(config) {
      current = indexConfig(config);
      setStatus('current');
      markReady();
      for (const listener of [...listeners]) {
        try {
          listener(config);
        } catch {
          // One listener failing must not keep the others, or the SDK, from the new config.
        }
      }
    },
    onError(error) {
      // Credentials the service refuses will not work on a retry: ready() says so at once.
      if (error.kind === 'config' && (error.status === 401 || error.status === 403)) refuse(new Error(`the service refused the ingest key (${error.status})`));
      onError(error);
      setStatus('stale');
    },
  });
  const exposures = rememberExposures(settings.maxExposures);
  const stopWatchingPage = watchPageHide(options.flushOnPageHide ?? true, () => delivery.flushOnHide());

  function expose(participant: string, attributes: Attributes | undefined, experiment: string, variant: string): void {
    if (!exposures.firstTime(participant, experiment)) return;
    delivery.enqueue({ participant: participantOf(participant, attributes), experiment, variant, idempotency_key: newIdempotencyKey() });
  }

  /** The participant's exposure to the flag's safe rollout, in the arm it was decided by. */
  function exposeRollout(participant: string, attributes: Attributes | undefined, flag: ConfigFeature, arm: 'new' | 'current'): void {
    const rollout = { feature: flag.key, number: flag.rollout!.number, arm };
    // `#` cannot occur in a key: a rollout is never taken for an experiment.
    if (!exposures.firstTime(participant, `${rollout.feature}#${rollout.number}`)) return;
    delivery.enqueue({ participant: participantOf(participant, attributes), rollout, idempotency_key: newIdempotencyKey() });
  }

  /** A decision never throws into the application: one that fails is null, and reported. */
  function decided<T>(key: string, decide: (config: IndexedConfig) => T | null): T | null {
    if (!current) return null;
    try {
      return decide(current);
    } catch (error) {
      onError({ kind: 'decision', key, message: String(error) });
      return null;
    }
  }

  /** The flag's decision with its exposures (experiments', its rollout's) queued, or null (unknown flag, no config, a failure reported). */
  function decideAndExpose(key: string, participant: string, attributes: Attributes | undefined) {
    return decided(key, (config) => {
      const decision = decideFeature(config, key, participant, attributes ?? {}, Date.now());
      if (!decision) return null;
      for (const exposure of decision.exposures) expose(participant, attributes, exposure.experiment, exposure.variant);
      if (decision.rolloutArm) exposeRollout(participant, attributes, decision.flag, decision.rolloutArm);
      return decision;
    });
  }

  return {
    ready: () => readiness,
    feature(key, participant, attributes) {
      return (decideAndExpose(key, participant, attributes)?.value ?? null) as never;
    },
    featureDetails(key, participant, attributes) {
      const decision = decideAndExpose(key, participant, attributes);
      if (!decision) return null;
      const details: FeatureDetails = { value: decision.value, text: decision.text, flag: decision.flag, reason: decision.reason, rule: decision.rule };
      if (decision.rolloutArm) details.rolloutArm = decision.rolloutArm;
      if (decision.variant) details.experiment = { key: decision.variant.experiment, variant: decision.variant.key };
      return details as never;
    },
    experiment(key, participant, attributes) {
      return decided(key, (config) => {
        const variant = decideExperiment(config, key, participant, attributes ?? {});
        if (variant !== null) expose(participant, attributes, key, variant);
        return variant;
      });
    },
    track(participant, event, value) {
      const item: IngestItem = { participant, event, enrol: false, idempotency_key: newIdempotencyKey() };
      delivery.enqueue(value === undefined ? item : { ...item, value });
    },
    flush: () => delivery.flush(),
    async close(closeOptions) {
      stopWatchingPage();
      source.stop();
      await delivery.close(closeOptions?.timeoutMs);
    },
    config: () => current?.config ?? null,
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    stats: () => delivery.stats(),
  };
}

function participantOf(key: string, attributes: Attributes | undefined): IngestItem['participant'] {
  return attributes && Object.keys(attributes).length > 0 ? { key, attributes } : key;
}

function definedOnly<T extends object>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as Partial<T>;
}

interface PageEvents {
  document?: { visibilityState?: string; addEventListener(type: string, listener: () => void): void; removeEventListener(type: string, listener: () => void): void };
  addEventListener?(type: string, listener: () => void): void;
  removeEventListener?(type: string, listener: () => void): void;
}

/** Browsers: calls `flush` when the page is hidden or left (the last moment a page can send); a no-op elsewhere. */
function watchPageHide(enabled: boolean, flush: () => void): () => void {
  const page = globalThis as unknown as PageEvents;
  const document = page.document;
  if (!enabled || !document || !page.addEventListener || !page.removeEventListener) return () => undefined;
  const onVisibility = () => {
    if (document.visibilityState === 'hidden') flush();
  };
  page.addEventListener('pagehide', flush);
  document.addEventListener('visibilitychange', onVisibility);
  return () => {
    page.removeEventListener!('pagehide', flush);
    document.removeEventListener('visibilitychange', onVisibility);
  };
}
