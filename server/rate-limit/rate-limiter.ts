import type { RequestHandler } from 'express';
// Only its address keys (IPv6 by /56): the counting is ours, a few µs a request instead of ~80.
import { ipKeyGenerator } from 'express-rate-limit';
import { hashCredential, kindOf } from '../auth/credentials';
import type { RateLimitSettings } from '../settings/settings';
import { HttpError } from '../http/errors';

/** 429: the budget of the current window is used up. Nothing of the request was done. */
export class TooManyRequests extends HttpError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, 'Too Many Requests', 'rate-limited', detail, undefined, { 'Retry-After': String(retryAfterSeconds) });
  }
}

/** The same shape authenticate() accepts; anything else can never authenticate. */
const BEARER = /^Bearer +([A-Za-z0-9_-]{1,200})$/i;

/**
 * Counts every /api request against a budget per window before anything else looks at it (the
 * contract's routing, authentication, body parsing, validation), and answers 429 — with nothing
 * done — once the budget is used up. `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset` go on every /api answer, `Retry-After` on a 429.
 *
 * Which budget, decided without a database lookup:
 * - a credential that has authenticated in this process (within the last 15 minutes or window)
 *   has its own budget, `perCredential`, keyed by the credential's SHA-256 — never the credential;
 * - everything else counts against the client address (`perAddress`; IPv6 by /56, as one
 *   subscriber's prefix): calls without a credential, malformed ones, and credentials not (yet)
 *   seen to authenticate. So a flood of made-up or revoked credentials is stopped by the address's
 *   budget before it costs a lookup, and a valid credential's first request counts once against
 *   its address before it has its own budget.
 *
 * The counts live in this process's memory: with N processes behind a balancer the budget is
 * effectively N × the limit (docs/operations.md, "Rate limits and CORS"). At most `keys` budgets
 * are counted in a window, and `keys` credentials remembered as authenticated: past either,
 * the oldest are forgotten, so no flood of addresses or credentials grows the process.
 */
export function rateLimiter(settings: RateLimitSettings): RequestHandler {
  const windowMs = settings.windowSeconds * 1000;
  const keys = settings.keys ?? 100_000;
  const authenticated = new RecentSet(Math.max(windowMs, 15 * 60_000), keys);
  const windows = new FixedWindows(windowMs, keys);

  return (req, res, next) => {
    if (!isApiPath(req.path)) return next();
    const hash = credentialHash(req.get('authorization'));
    const byCredential = hash !== undefined && authenticated.has(hash);
    const key = byCredential ? `credential:${hash}` : `address:${ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown')}`;
    const limit = byCredential ? settings.perCredential : settings.perAddress;
    const now = Date.now();
    const { count, resetAt } = windows.hit(key, now);
    const resetSeconds = Math.max(0, Math.ceil((resetAt - now) / 1000));
    res.setHeader('RateLimit-Limit', limit);
    res.setHeader('RateLimit-Remaining', Math.max(0, limit - count));
    res.setHeader('RateLimit-Reset', resetSeconds);
    if (hash !== undefined) {
      res.once('finish', () => {
        // authenticate() sets res.locals.principal once the credential is found valid.
        if (res.locals.principal !== undefined) authenticated.add(hash);
        else if (res.statusCode === 401) authenticated.delete(hash);
      });
    }
    if (count <= limit) return next();
    const who = byCredential ? 'This credential' : 'This client address (calls without a valid credential)';
    next(new TooManyRequests(`${who} has used its ${limit} requests of the current ${windowName(settings.windowSeconds)}; retry in ${resetSeconds} s.`, resetSeconds));
  };
}

export function isApiPath(path: string): boolean {
  return path === '/api' || path.startsWith('/api/');
}

/** The SHA-256 of a bearer credential that could authenticate, or undefined. */
function credentialHash(header: string | undefined): string | undefined {
  const credential = header === undefined ? undefined : BEARER.exec(header)?.[1];
  if (credential === undefined || kindOf(credential) === undefined) return undefined;
  return hashCredential(credential);
}

function windowName(seconds: number): string {
  if (seconds === 60) return 'minute';
  if (seconds === 3600) return 'hour';
  return `${seconds}-second window`;
}

/**
 * A counter per key over a window that starts at the key's first request and ends `windowMs`
 * later. Keys whose window has ended are dropped as the maps rotate, once a window: bounded
 * memory without a timer. Each map holds at most `maxKeys`: past it the key counted first in
 * the current map is forgotten.
 */
class FixedWindows {
  private current = new Map<string, { count: number; resetAt: number }>();
  private previous = new Map<string, { count: number; resetAt: number }>();
  private rotateAt: number;

  constructor(
    private readonly windowMs: number,
    private readonly maxKeys: number,
  ) {
    this.rotateAt = Date.now() + windowMs;
  }

  hit(key: string, now: number): { count: number; resetAt: number } {
    if (now >= this.rotateAt) {
      this.previous = this.current;
      this.current = new Map();
      this.rotateAt = now + this.windowMs;
    }
    let window = this.current.get(key) ?? this.previous.get(key);
    if (!window || window.resetAt <= now) window = { count: 0, resetAt: now + this.windowMs };
    window.count++;
    if (!this.current.has(key)) {
      this.previous.delete(key);
      if (this.current.size >= this.maxKeys) this.current.delete(this.current.keys().next().value!);
    }
    this.current.set(key, window);
    return window;
  }
}

/**
 * Strings added within the last `ttlMs` to 2 × `ttlMs` (two generations: bounded memory without
 * a timer), at most `maxSize` per generation: a full one becomes the older at once.
 */
class RecentSet {
  private current = new Set<string>();
  private previous = new Set<string>();
  private rotateAt: number;

  constructor(
    private readonly ttlMs: number,
    private readonly maxSize: number,
  ) {
    this.rotateAt = Date.now() + ttlMs;
  }

  has(value: string): boolean {
    this.rotate();
    if (this.current.has(value)) return true;
    if (!this.previous.has(value)) return false;
    this.add(value);
    return true;
  }

  add(value: string): void {
    this.rotate();
    this.current.add(value);
    if (this.current.size < this.maxSize) return;
    this.previous = this.current;
    this.current = new Set();
  }

  delete(value: string): void {
    this.current.delete(value);
    this.previous.delete(value);
  }

  private rotate(): void {
    const now = Date.now();
    if (now < this.rotateAt) return;
    this.previous = now - this.rotateAt < this.ttlMs ? this.current : new Set();
    this.current = new Set();
    this.rotateAt = now + this.ttlMs;
  }
}
