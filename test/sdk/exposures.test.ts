// The SDK's memory of exposures sent (sdk/exposures.ts): each pair once, within a bound.
import { describe, expect, it } from 'vitest';
import { rememberExposures } from '../../sdk/exposures';

describe('the SDK exposures', () => {
  it('when a participant is exposed to an experiment again, then only the first time counts', () => {
    const exposures = rememberExposures(10);
    expect(exposures.firstTime('user-1', 'checkout')).toBe(true);
    expect(exposures.firstTime('user-1', 'checkout')).toBe(false);
    expect(exposures.firstTime('user-1', 'pricing')).toBe(true);
    expect(exposures.firstTime('user-2', 'checkout')).toBe(true);
  });

  it('when more pairs are seen than the bound, then the oldest are forgotten and the newest kept', () => {
    const exposures = rememberExposures(2);
    for (const participant of ['a', 'b', 'c']) exposures.firstTime(participant, 'checkout');
    expect(exposures.firstTime('c', 'checkout')).toBe(false);
    expect(exposures.firstTime('b', 'checkout')).toBe(false);
    expect(exposures.firstTime('a', 'checkout')).toBe(true);
  });
});
