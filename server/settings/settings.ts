import { resolve } from 'node:path';

/** Request budgets (see server/rate-limit/rate-limiter.ts): per credential, and per client address for calls without a valid one. */
export interface RateLimitSettings {
  enabled: boolean;
  windowSeconds: number;
  perCredential: number;
  perAddress: number;
  /**
   * RATE_LIMIT_KEYS (100 000): budgets (credentials and addresses) counted in one window, and
   * credentials remembered as authenticated; past it the oldest are forgotten (their count
   * starts again), so a flood of addresses cannot grow the process.
   */
  keys?: number;
}

/** What a process keeps in memory that clients' requests fill, each bounded (docs/operations.md, "Memory"). */
export interface CacheSettings {
  /** CACHE_TEAMS (10 000): teams whose config, and whose ingest context, a process keeps; one more starts the cache over. */
  teams: number;
  /**
   * CACHE_UNKNOWN_KEYS (100 000): event and experiment keys that ingests named and that were not
   * found, remembered (by team and config version) so that naming one again is a 404 without a
   * query; past it the oldest half is forgotten.
   */
  unknownKeys: number;
}

/** How many config streams (GET /api/teams/{team}/config/stream) a server process holds open. */
export interface ConfigStreamSettings {
  /** CONFIG_STREAMS_PER_CREDENTIAL (10): per API token or ingest key; one more is a 429. */
  perCredential: number;
  /** CONFIG_STREAMS_PER_PROCESS (1 000): in all; one more is a 503. */
  perProcess: number;
}

/** Express's `trust proxy`: which hops' `X-Forwarded-For` to believe when telling the client address. */
export type TrustProxy = boolean | number | string;

/** How webhooks are delivered (server/webhooks/delivery.ts; docs/operations.md, "Webhooks"). */
export interface WebhookSettings {
  /** WEBHOOK_ALLOW_PRIVATE_ADDRESSES (false): endpoints may be on loopback, private and link-local addresses (tests, internal receivers). */
  allowPrivateAddresses: boolean;
  /** WEBHOOK_TIMEOUT_SECONDS (10): an attempt with no complete answer by then failed. */
  timeoutMs: number;
  /** WEBHOOK_RETRY_BASE_SECONDS (5): the wait after a first failed attempt; it doubles with each, with jitter. */
  retryBaseMs: number;
  /** WEBHOOK_RETRY_MAX_SECONDS (3 600): the longest wait between two attempts. */
  retryMaxMs: number;
  /** WEBHOOK_RETRY_WINDOW_SECONDS (86 400): a delivery is retried until this long after its first attempt, then failed. */
  retryWindowMs: number;
  /** WEBHOOK_POLL_SECONDS (1): how often a process looks for deliveries due. */
  pollMs: number;
  /** WEBHOOK_SECRET_OVERLAP_SECONDS (86 400; 0 for none): how long a rotated-out secret still signs deliveries, beside the new one. */
  secretOverlapMs: number;
}

export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  validateResponses: boolean;
  /** Off only to measure the validator's cost: without it, invalid requests reach the routes. */
  validateRequests: boolean;
  logLevel: string;
  trustProxy: TrustProxy;
  rateLimit: RateLimitSettings;
  configStreams: ConfigStreamSettings;
  /** OFREP's event streams (GET /api/teams/{team}/ofrep/v1/event-stream), one per page that runs OFREP's web provider. */
  ofrepStreams: ConfigStreamSettings;
  caches: CacheSettings;
  /** DATABASE_CONNECT_TIMEOUT_SECONDS (5): PostgreSQL — a request waits at most this for a connection, then 503. */
  connectTimeoutMs: number;
  /** SQLITE_BUSY_TIMEOUT_SECONDS (5): SQLite — a write waits at most this for another process's write lock, then 503. */
  busyTimeoutMs: number;
  /** INGEST_KEY_WINDOW_SECONDS (86 400): how long an ingest item's idempotency key is kept. */
  ingestKeyWindowMs: number;
  /** AUDIT_LOG_RETENTION_DAYS (90, at least 90): audit entries older than this are deleted. */
  auditLogRetentionDays: number;
  webhooks: WebhookSettings;
  /** ROLLOUT_CHECK_SECONDS (60): how often each process checks the safe rollouts (server/rollouts/watcher.ts). */
  rolloutCheckMs: number;
}

/** What the app itself is built from (createApp): the rest of Settings is the process's. */
export type AppSettings = Pick<Settings, 'validateRequests' | 'trustProxy' | 'rateLimit' | 'configStreams' | 'ofrepStreams' | 'caches' | 'ingestKeyWindowMs'> & {
  webhooks: Pick<WebhookSettings, 'allowPrivateAddresses' | 'secretOverlapMs'>;
};

/** The documented defaults, as an empty environment gives them. */
export const DEFAULT_SETTINGS: Readonly<Settings> = settingsFromEnv({});

/** Reads the environment once, at start-up (main.ts, the CLIs and the tests' harness: the composition roots). */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): Settings {
  return {
    port: Number(env.PORT ?? 3000),
    host: env.HOST ?? '127.0.0.1',
    dataDir: resolve(env.DATA_DIR ?? 'data'),
    databaseUrl: env.DATABASE_URL || undefined,
    validateResponses: env.VALIDATE_RESPONSES === 'true',
    validateRequests: env.VALIDATE_REQUESTS !== 'false',
    logLevel: env.LOG_LEVEL ?? 'info',
    trustProxy: trustProxyFromEnv(env),
    rateLimit: rateLimitFromEnv(env),
    configStreams: configStreamsFromEnv(env),
    ofrepStreams: ofrepStreamsFromEnv(env),
    caches: cachesFromEnv(env),
    connectTimeoutMs: seconds(env, 'DATABASE_CONNECT_TIMEOUT_SECONDS', 5),
    busyTimeoutMs: seconds(env, 'SQLITE_BUSY_TIMEOUT_SECONDS', 5),
    ingestKeyWindowMs: ingestKeyWindowFromEnv(env),
    auditLogRetentionDays: auditLogRetentionFromEnv(env),
    webhooks: webhooksFromEnv(env),
    rolloutCheckMs: seconds(env, 'ROLLOUT_CHECK_SECONDS', 60),
  };
}

/** WEBHOOK_* (see WebhookSettings). */
export function webhooksFromEnv(env: NodeJS.ProcessEnv = process.env): WebhookSettings {
  return {
    allowPrivateAddresses: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_ADDRESSES', false),
    timeoutMs: seconds(env, 'WEBHOOK_TIMEOUT_SECONDS', 10),
    retryBaseMs: seconds(env, 'WEBHOOK_RETRY_BASE_SECONDS', 5),
    retryMaxMs: seconds(env, 'WEBHOOK_RETRY_MAX_SECONDS', 3600),
    retryWindowMs: seconds(env, 'WEBHOOK_RETRY_WINDOW_SECONDS', 86_400),
    pollMs: seconds(env, 'WEBHOOK_POLL_SECONDS', 1),
    secretOverlapMs: integer(env, 'WEBHOOK_SECRET_OVERLAP_SECONDS', 86_400, 604_800, 0) * 1000,
  };
}

/** INGEST_KEY_WINDOW_SECONDS (86 400, the contract's 24 hours): how long a stored idempotency key makes its item's resending a replay. */
export function ingestKeyWindowFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return seconds(env, 'INGEST_KEY_WINDOW_SECONDS', 86_400);
}

/**
 * RATE_LIMIT_ENABLED (true), RATE_LIMIT_WINDOW_SECONDS (60), RATE_LIMIT_PER_CREDENTIAL (60 000)
 * RATE_LIMIT_PER_ADDRESS (6 000) and RATE_LIMIT_KEYS (100 000). Bounded as the contract's RateLimit-* headers are.
 */
export function rateLimitFromEnv(env: NodeJS.ProcessEnv = process.env): RateLimitSettings {
  return {
    enabled: boolean(env, 'RATE_LIMIT_ENABLED', true),
    windowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 86_400),
    perCredential: integer(env, 'RATE_LIMIT_PER_CREDENTIAL', 60_000, 1_000_000_000),
    perAddress: integer(env, 'RATE_LIMIT_PER_ADDRESS', 6_000, 1_000_000_000),
    keys: integer(env, 'RATE_LIMIT_KEYS', 100_000, 100_000_000),
  };
}

/** AUDIT_LOG_RETENTION_DAYS (90): the contract promises at least 90 days, so less is refused at start-up. */
export function auditLogRetentionFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const days = integer(env, 'AUDIT_LOG_RETENTION_DAYS', 90, 36_500);
  if (days < 90) throw new Error(`AUDIT_LOG_RETENTION_DAYS must be at least 90, not '${env.AUDIT_LOG_RETENTION_DAYS}'`);
  return days;
}

/** CACHE_TEAMS (10 000) and CACHE_UNKNOWN_KEYS (100 000). */
export function cachesFromEnv(env: NodeJS.ProcessEnv = process.env): CacheSettings {
  return {
    teams: integer(env, 'CACHE_TEAMS', 10_000, 1_000_000),
    unknownKeys: integer(env, 'CACHE_UNKNOWN_KEYS', 100_000, 100_000_000),
  };
}

/** CONFIG_STREAMS_PER_CREDENTIAL (10) and CONFIG_STREAMS_PER_PROCESS (1 000). */
export function configStreamsFromEnv(env: NodeJS.ProcessEnv = process.env): ConfigStreamSettings {
  return {
    perCredential: integer(env, 'CONFIG_STREAMS_PER_CREDENTIAL', 10, 1_000_000),
    perProcess: integer(env, 'CONFIG_STREAMS_PER_PROCESS', 1000, 1_000_000),
  };
}

/**
 * OFREP_STREAMS_PER_CREDENTIAL (1 000) and OFREP_STREAMS_PER_PROCESS (5 000): every page that
 * runs OFREP's web provider holds one, all with the team's one ingest key, and each carries only
 * short change notices.
 */
export function ofrepStreamsFromEnv(env: NodeJS.ProcessEnv = process.env): ConfigStreamSettings {
  return {
    perCredential: integer(env, 'OFREP_STREAMS_PER_CREDENTIAL', 1000, 1_000_000),
    perProcess: integer(env, 'OFREP_STREAMS_PER_PROCESS', 5000, 1_000_000),
  };
}

/**
 * TRUST_PROXY (false): `true`, a number of hops, or a comma-separated list of addresses, subnets
 * or `loopback` / `linklocal` / `uniquelocal` — as Express's `trust proxy` takes it. Only set it
 * behind a proxy that overwrites X-Forwarded-For: otherwise clients choose their own address.
 */
export function trustProxyFromEnv(env: NodeJS.ProcessEnv = process.env): TrustProxy {
  const raw = env.TRUST_PROXY?.trim();
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new Error(`${name} must be true or false, not '${raw}'`);
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be a whole number from ${min} to ${max}, not '${raw}'`);
  return value;
}

/** A number of seconds (decimals allowed) above 0, in milliseconds. */
export function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback * 1000;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > 86_400) throw new Error(`${name} must be a number of seconds above 0, not '${raw}'`);
  return Math.round(value * 1000);
}
