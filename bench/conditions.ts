// What a hostile `$regex` costs: JavaScript's backtracking RegExp against the RE2 engine
// (re2js) the condition evaluator uses, on the longest text an attribute can turn into (an array
// of 100 strings of 200 characters, joined: 20 099 characters), and a whole condition of 20 such
// patterns. Figures are ratios to a baseline measured in the same run: the native rows to the
// native engine on 16 characters, the others to re2js scanning the longest text for a "b".
// Run: npx tsx bench/conditions.ts
import { RE2JS } from 're2js';
import { type Condition, CONDITION_LIMITS, conditionProblems, evaluateCondition } from '../domain/conditions';

const LONGEST = Array.from({ length: 100 }, () => 'a'.repeat(200));
const LONGEST_TEXT = `${LONGEST.join(',')}!`;

/** Median milliseconds of `runs` calls. */
function median(runs: number, work: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    work();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

const once = (work: () => unknown) => median(1, work);
const rows: Array<[string, string, string]> = [];
const add = (what: string, ms: number, baseline: number) => rows.push([what, `${ms.toFixed(3)} ms`, `${(ms / baseline).toFixed(1)} ×`]);

// The native engine on (a+)+$: each added character about doubles the time (ratios to 16 characters).
const hostile = /(a+)+$/;
const native16 = median(3, () => hostile.test(`${'a'.repeat(16)}!`));
for (const length of [16, 18, 20, 22]) {
  add(`native /(a+)+$/ on ${length} a's and "!"`, median(3, () => hostile.test(`${'a'.repeat(length)}!`)), native16);
}

// RE2's baseline: a scan of the longest text for a character it does not hold (after warming re2js up).
const scan = RE2JS.compile('b');
median(51, () => RE2JS.compile('c+d').test(LONGEST_TEXT));
const baseline = median(51, () => scan.test(LONGEST_TEXT));
add('baseline: re2js /b/ on 20 099 characters (no match)', baseline, baseline);

// RE2 on patterns within the bounds (the first match builds the engine's state cache).
const patterns = ['(a+)+$', '(a|a)*$', '(.*a){60}$', '(?i)(a|b){80}!', '(.{10}){19}!', `${'.'.repeat(480)}$`];
for (const pattern of patterns) {
  const compiled = RE2JS.compile(pattern);
  if (compiled.programSize() > CONDITION_LIMITS.patternInstructions) throw new Error(`${pattern} is over the bound`);
  add(`re2js /${pattern.length > 24 ? `${pattern.slice(0, 12)}…` : pattern}/ (${compiled.programSize()} instructions), first match`, once(() => compiled.test(LONGEST_TEXT)), baseline);
  add(`re2js /${pattern.length > 24 ? `${pattern.slice(0, 12)}…` : pattern}/, later matches (median of 21)`, median(21, () => compiled.test(LONGEST_TEXT)), baseline);
}

// A whole condition: 20 patterns (the bound), none matching, so each runs on the longest array attribute.
const condition = { $nor: Array.from({ length: CONDITION_LIMITS.patterns }, (_, i) => ({ tags: { $regex: `(.*a){${40 + i}}!` } })) } as Condition;
if (conditionProblems(condition, '').length > 0) throw new Error('the condition is not valid');
const simple = { plan: 'pro', tags: { $in: ['beta'] } } as Condition;
const attributes = { plan: 'pro', tags: LONGEST };
const simpleTime = median(201, () => evaluateCondition(simple, attributes));
add('evaluateCondition: { plan, tags $in } (second baseline)', simpleTime, baseline);
const validate = once(() => conditionProblems(condition, ''));
add('conditionProblems: 20 hostile patterns (compiles each)', validate, baseline);
let holds = false;
add('evaluateCondition: 20 hostile patterns on 100 × 200 tags, first', once(() => (holds = evaluateCondition(condition, attributes))), baseline);
if (!holds) throw new Error('a pattern matched: the condition did not run all 20');
add('evaluateCondition: the same, later (median of 11)', median(11, () => evaluateCondition(condition, attributes)), baseline);

const width = Math.max(...rows.map(([what]) => what.length));
console.log(`${'what'.padEnd(width)}  ${'time'.padStart(14)}  ${'ratio'.padStart(12)}`);
for (const [what, time, ratio] of rows) console.log(`${what.padEnd(width)}  ${time.padStart(14)}  ${ratio.padStart(12)}`);
