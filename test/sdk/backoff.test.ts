// The SDK's waits between retries (sdk/backoff.ts): exponential, capped, jittered, and never
// shorter than what the server's Retry-After asks for.
import { describe, expect, it } from 'vitest';
import { backoff, retryAfterMs } from '../../sdk/backoff';

describe('the SDK backoff', () => {
  it('when attempts fail in a row, then each wait doubles up to the cap, between half of it and all of it', () => {
    const lowest = backoff(100, 1_000, () => 0);
    const highest = backoff(100, 1_000, () => 1);
    expect(Array.from({ length: 6 }, () => lowest.next())).toEqual([50, 100, 200, 400, 500, 500]);
    expect(Array.from({ length: 6 }, () => highest.next())).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('when reset after a success, then the next wait starts from the base again', () => {
    const waits = backoff(100, 1_000, () => 1);
    waits.next();
    waits.next();
    waits.reset();
    expect(waits.next()).toBe(100);
  });

  it('when the server sent Retry-After, then the wait is at least that long', () => {
    const waits = backoff(100, 1_000, () => 0);
    expect(waits.next('3')).toBe(3_000);
    expect(waits.next('0')).toBe(100);
    expect(waits.next(null)).toBe(200);
  });

  it('when Retry-After is an HTTP date, then it is read as the time until then; anything else is ignored', () => {
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    expect(retryAfterMs(inTenSeconds)).toBeGreaterThan(8_000);
    expect(retryAfterMs(inTenSeconds)).toBeLessThanOrEqual(10_000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs('')).toBeUndefined();
  });
});
