import { RE2JS, RE2Set } from 're2js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Condition, CONDITION_LIMITS, evaluateCondition } from '../../domain/conditions';
import { conditionOutcome } from '../../domain/conditions/evaluate';

const LIMIT = CONDITION_LIMITS.evaluationSteps;

/** The longest array attribute (100 strings of 200 characters: 20 099 characters as a string), counting its conversions to a string. */
function countedTags(strings = 100): { tags: string[]; conversions: () => number } {
  let conversions = 0;
  const tags = Array.from({ length: strings }, (_, i) => `${i}`.padEnd(200, 'x'));
  Object.defineProperty(tags, 'toString', {
    value: () => {
      conversions++;
      return tags.join(',');
    },
  });
  return { tags, conversions: () => conversions };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the steps of one evaluation', () => {
  it('when $nor holds 999 literals over a 20 KB array attribute, then it stops at the limit after one conversion and does not hold', () => {
    const condition = { $nor: Array.from({ length: 999 }, () => ({ t: 'q' })) } as Condition;
    const { tags, conversions } = countedTags();
    expect(evaluateCondition(condition, { t: tags })).toBe(false);
    expect(conversions()).toBe(1); // 999 without a limit
  });

  it('when the same literals meet a 2 KB array, then the array is converted as often as the steps allow, never more', () => {
    const condition = { $nor: Array.from({ length: 999 }, () => ({ t: 'q' })) } as Condition;
    const { tags, conversions } = countedTags(10); // 2 009 characters; a literal costs 1 + 2 009 steps
    const outcome = conditionOutcome(condition, { t: tags });
    expect(outcome).toMatchObject({ holds: false, exhausted: true });
    expect(conversions()).toBe(Math.floor((LIMIT - 1) / 2010) + 1);
  });

  it('when a condition fits in the steps, then it is evaluated whole and the steps it took are the contract\'s count', () => {
    const condition = { plan: 'pro', tags: { $in: ['beta', 'early'] } } as Condition;
    // plan: 1 key; tags: 1 key + 1 operator + (2 values + 2 elements)
    expect(conditionOutcome(condition, { plan: 'pro', tags: ['a', 'beta'] })).toEqual({ holds: true, steps: 7, exhausted: false });
  });

  it('when 20 patterns meet a 20 KB attribute, then no pattern runs: (characters + 1) × instructions × 4 is past the steps before matching', () => {
    const runs = [vi.spyOn(RE2JS.prototype, 'test'), vi.spyOn(RE2Set.prototype, 'match')];
    const condition = { $nor: Array.from({ length: 20 }, (_, i) => ({ t: { $regex: `a[ab]{20}[^ab,\\x{1${String(i).padStart(2, '0')}}]` } })) } as Condition;
    expect(conditionOutcome(condition, { t: countedTags().tags })).toMatchObject({ holds: false, exhausted: true });
    expect(runs.reduce((sum, spy) => sum + spy.mock.calls.length, 0)).toBe(0);
  });

  it('when a hostile pattern runs on the longest text its steps allow, then its automaton keeps at most 256 KiB', () => {
    const match = vi.spyOn(RE2Set.prototype, 'match');
    const pattern = 'a[ab]{20}[^ab,\\x{1ff}]';
    const instructions = RE2JS.compile(pattern).programSize();
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const text = Array.from({ length: Math.floor(LIMIT / (instructions * CONDITION_LIMITS.patternStepWeight)) - 2 }, () => (random() < 0.5 ? 'a' : 'b')).join('');
    expect(conditionOutcome({ t: { $regex: pattern } } as Condition, { t: text })).toMatchObject({ holds: false, exhausted: false });
    expect(match).toHaveBeenCalledTimes(1);
    const automaton = (match.mock.contexts[0] as unknown as { dfa: { maxMem: number; memBudget: number } }).dfa;
    expect(automaton.maxMem).toBe(256 * 1024);
    expect(automaton.maxMem - automaton.memBudget).toBeLessThanOrEqual(256 * 1024);
  });

  it('when $in compares 100 values with 1000 elements, then it takes 1 100 steps, not 100 000', () => {
    const list = Array.from({ length: 1000 }, (_, i) => i);
    const values = Array.from({ length: 100 }, (_, i) => 5000 + i);
    expect(conditionOutcome({ n: { $in: list } } as Condition, { n: values })).toEqual({ holds: false, steps: 1102, exhausted: false });
  });
});
