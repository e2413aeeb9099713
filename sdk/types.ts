// The SDK's public types: its declarations (generated/sdk.d.ts) are this file's, followed by
// createClient's from index.ts, so they name only the contract's types.
import type { components } from '../generated/api';

type Schemas = components['schemas'];

/** A participant's attributes, matched against conditions (and stored with its exposures). */
export type Attributes = Schemas['Attributes'];

/**
 * What a flag serves, read as its type (the contract's FlagType): a string for `string` flags
 * (every flag created without a type), true or false for `boolean`, a number for `number`, a
 * frozen object for `json`.
 */
export type FlagValue = string | number | boolean | { readonly [key: string]: unknown };

/** The team config the decisions are made from: the `data` of `GET /api/teams/{team}/config`. */
export type Config = Schemas['Config'];

/**
 * One item of the batch ingest, as the SDK sends it: always with an `idempotency_key`, and
 * `enrol: false` for events.
 */
export type IngestItem = Schemas['IngestRequest'];

/** A flag as the config has it. */
export type ConfigFeature = Schemas['ConfigFeature'];

/**
 * What `featureDetails()` decided and why: the value `feature()` answers, and what served it —
 * for reporting reasons and variants (the OpenFeature providers build theirs from it).
 */
export interface FeatureDetails<T extends FlagValue = FlagValue> {
  /** What `feature()` answers: the value read as the flag's type, or null (disabled, a null value, or text that does not read as the type). */
  value: T | null;
  /** The value as the config keeps it (text), before it is read as the flag's type. */
  text: string | null;
  /** The flag, as the config has it. */
  flag: ConfigFeature;
  /** As `POST …/evaluate` answers it: `disabled`, `rule` (the flag's rules[`rule`] served), `rollout` (no rule applied; the flag's safe rollout decided, see `rolloutArm`) or `default` (no rule applied: the flag's own value). */
  reason: 'disabled' | 'rule' | 'rollout' | 'default';
  /** With reason `rollout`: the participant's arm of the flag's safe rollout (`new` is served its new value). */
  rolloutArm?: 'new' | 'current';
  rule: number | null;
  /** The experiment whose rule served the value, and the participant's variant in it. */
  experiment?: { key: string; variant: string };
}

/** Whether the decisions' config is known to be the service's current one (see `onStatus`). */
export type ConfigStatus = 'current' | 'stale';

/** Why something was not delivered or not fetched; passed to `onError`. */
export type SdkError =
  /** The service answered an item 4xx (400, 401, 402, 403, 404, 409, 413; not 408, 425 or 429, which are retried): it is dropped, never retried. */
  | { kind: 'rejected'; status: number; item: IngestItem; problem?: Schemas['Problem'] }
  /** The queue was full: `count` items queued since the last report were dropped. */
  | { kind: 'dropped'; count: number }
  /** `close()` gave up waiting: these items were never answered. */
  | { kind: 'abandoned'; items: IngestItem[] }
  /** The config could not be read (the stream or a poll), or was not usable (too large, not the contract's shape): the last good one is kept, and the SDK keeps trying. */
  | { kind: 'config'; status?: number; message: string }
  /** `feature()` or `experiment()` failed for `key` (such as a participant that is not a string): it answered null. */
  | { kind: 'decision'; key: string; message: string };

export interface ClientOptions {
  /** Where the service is, e.g. `https://experiments.example.com` (no trailing `/api`). */
  baseUrl: string;
  /** The team's id. */
  team: number;
  /** The team's ingest key (or an API token). */
  ingestKey: string;
  /** Called for what is rejected, dropped or abandoned, and for config failures. Never throws into the SDK. */
  onError?: (error: SdkError) => void;
  /**
   * Called when the config's status changes: `stale` when it could not be read or checked (the
   * stream broke, a poll failed or was refused, the service sent a config that is not usable —
   * decisions go on from the last good one), `current` when it is known current again (a config
   * taken, a poll answered 304, the stream connected). Never throws into the SDK.
   */
  onStatus?: (status: ConfigStatus) => void;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Read config changes from `GET …/config/stream` (default true); false: poll only. */
  stream?: boolean;
  /** How often to poll `GET …/config` while the stream is not connected (default 30 000 ms). */
  pollIntervalMs?: number;
  /** A queued item goes out at most this long after it was queued (default 1 000 ms). */
  flushIntervalMs?: number;
  /** Items per batch request, 1–500 (default 500); a full batch goes out at once. */
  batchSize?: number;
  /** Items kept while the service does not answer (default 10 000); more are dropped and counted. */
  maxQueue?: number;
  /** The longest wait between two retries (default 30 000 ms); waits double from `retryBaseMs` (default 250 ms), with jitter. */
  maxRetryDelayMs?: number;
  retryBaseMs?: number;
  /** A batch or config poll not answered within this is given up and tried again (default 30 000 ms). */
  requestTimeoutMs?: number;
  /** How many participant–experiment and participant–rollout exposures to remember, so that each is sent once (default 100 000). */
  maxExposures?: number;
  /** Browsers: flush with `keepalive` when the page is hidden (default true where there is a `document`). */
  flushOnPageHide?: boolean;
}

/** Counters for monitoring: what was delivered, rejected and dropped, and what is waiting. */
export interface DeliveryStats {
  queued: number;
  delivered: number;
  rejected: number;
  dropped: number;
  retries: number;
}

export interface Client {
  /**
   * Resolves once a config is there (from the stream or a poll); decisions before that are null.
   * Rejects when the service refuses the ingest key (401, 403); the SDK keeps trying all the same.
   */
  ready(): Promise<void>;
  /**
   * The flag's value for the participant, read as the flag's type, or null (unknown or disabled
   * flag, null value, no config yet). `T` names the type the application expects — `string` when
   * not given, what every flag without a type serves: `feature<boolean>('dark_mode', user)`. It is
   * not checked at run time; the flag's `type` decides what comes back. Queues an exposure (once
   * per process) for each experiment whose rule the flag reached with the participant in it, and
   * one to the flag's safe rollout when it decided (`rolloutArm`), in the participant's arm.
   */
  feature<T extends FlagValue = string>(key: string, participant: string, attributes?: Attributes): T | null;
  /**
   * `feature()`'s decision with what made it (the flag, the rule, the experiment's variant), and
   * its exposures queued as `feature()` queues them; null when there is no config yet, the flag is
   * not in it, or the decision failed (reported to `onError` as kind 'decision').
   */
  featureDetails<T extends FlagValue = FlagValue>(key: string, participant: string, attributes?: Attributes): FeatureDetails<T> | null;
  /** The participant's variant key in the running experiment, or null; queues its exposure (once per process). */
  experiment(key: string, participant: string, attributes?: Attributes): string | null;
  /** Queues an event; it counts only in experiments the participant is already enrolled in, and never enrols it. */
  track(participant: string, event: string, value?: number): void;
  /** Resolves once every item queued before the call has been answered (stored, or rejected and reported). */
  flush(): Promise<void>;
  /** Flushes (waiting at most `timeoutMs`, default unlimited), ends the config stream and stops timers. */
  close(options?: { timeoutMs?: number }): Promise<void>;
  /** The config the decisions are made from now, or null before the first one. */
  config(): Config | null;
  /**
   * Calls `listener` with each config the SDK takes from now on (the first one, and every change
   * the stream or a poll brings), after decisions use it: read flags again there to see a flip.
   * Returns the function that stops the calls.
   */
  subscribe(listener: (config: Config) => void): () => void;
  stats(): DeliveryStats;
}
