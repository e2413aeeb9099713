/**
 * GrowthBook's condition language, evaluated as its JavaScript SDK evaluates it. The rules are
 * stated in openapi/components/schemas/Condition.yaml; test/vectors/conditions.json holds the
 * cases a reimplementation must agree with.
 */
import type { components } from '../../generated/api';
import { asNumber, asString, compare, isPlainObject, isTruthy, strictlyEqual, typeName } from './javascript';
import { CONDITION_LIMITS } from './limits';
import { compilePattern } from './pattern';
import { paddedVersion } from './version';

export type Condition = components['schemas']['Condition'];
/** What a condition reads: a participant's attributes (any JSON object: paths may go into nested objects and arrays). */
export type ConditionAttributes = Readonly<Record<string, unknown>>;

/**
 * Whether the attributes satisfy the condition. Total: a malformed condition is false, never an
 * error, and so is one whose evaluation would take more than its steps (`CONDITION_LIMITS.evaluationSteps`).
 */
export function evaluateCondition(condition: Condition, attributes: ConditionAttributes): boolean {
  return conditionOutcome(condition, attributes).holds;
}

/** The evaluation and the steps it took; `exhausted` when it stopped at the limit (the condition then does not hold). */
export function conditionOutcome(condition: Condition, attributes: ConditionAttributes): { holds: boolean; steps: number; exhausted: boolean } {
  const steps = new Steps(CONDITION_LIMITS.evaluationSteps);
  try {
    return { holds: holds(condition, attributes, steps), steps: steps.taken, exhausted: false };
  } catch (error) {
    // A throw other than the limit's comes only from inputs no JSON document holds (cycles, exotic objects).
    return { holds: false, steps: steps.taken, exhausted: error === EXHAUSTED };
  }
}

const EXHAUSTED = new Error('the condition took more steps than an evaluation may');

/** The work of one evaluation, counted as Condition.yaml's "Cost" states; it throws EXHAUSTED past the limit. */
class Steps {
  taken = 0;
  constructor(private readonly limit: number) {}

  take(count: number): void {
    this.taken += count;
    if (this.taken > this.limit) throw EXHAUSTED;
  }

  /** A value as text (`String(v)`): an array or an object costs a step per character of the result. */
  text(value: unknown): string {
    const text = asString(value);
    if (typeof value === 'object' && value !== null) this.take(text.length);
    return text;
  }
}

function holds(condition: unknown, subject: unknown, steps: Steps): boolean {
  if (!isPlainObject(condition)) return false;
  for (const [key, operand] of Object.entries(condition)) {
    steps.take(1);
    if (!keyHolds(key, operand, subject, steps)) return false;
  }
  return true;
}

function keyHolds(key: string, operand: unknown, subject: unknown, steps: Steps): boolean {
  switch (key) {
    case '$and':
      return Array.isArray(operand) && operand.every((condition) => holds(condition, subject, steps));
    case '$or':
      return Array.isArray(operand) && anyHolds(operand, subject, steps);
    case '$nor':
      return Array.isArray(operand) && !anyHolds(operand, subject, steps);
    case '$not':
      return !holds(operand, subject, steps);
    default:
      if (key.startsWith('$')) return false; // an unknown logical operator
      return valueMatches(valueAt(subject, key), operand, false, steps);
  }
}

/** `$or`: one of the conditions holds, or there are none. */
function anyHolds(conditions: unknown[], subject: unknown, steps: Steps): boolean {
  return conditions.length === 0 || conditions.some((condition) => holds(condition, subject, steps));
}

/** The value at a dotted path: own properties of objects, indices and `length` of arrays; null when absent (an undefined value, which JSON cannot carry, is absent). */
function valueAt(subject: unknown, path: string): unknown {
  let current = subject;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, part)) return null;
    current = (current as Record<string, unknown>)[part];
  }
  return current === undefined ? null : current;
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key.startsWith('$'));
}

/** An array or object value as the text JavaScript's conversions make of it, its characters counted. */
const asTextFirst = (value: unknown, steps: Steps): unknown => (typeof value === 'object' && value !== null ? steps.text(value) : value);

/** A value against a literal or an operator object; `caseInsensitive` (from `$alli`) applies to string literals. */
function valueMatches(actual: unknown, expected: unknown, caseInsensitive: boolean, steps: Steps): boolean {
  if (typeof expected === 'string') {
    const text = steps.text(actual);
    return caseInsensitive ? text.toLowerCase() === expected.toLowerCase() : text === expected;
  }
  if (typeof expected === 'number') return asNumber(asTextFirst(actual, steps)) === expected;
  if (typeof expected === 'boolean') return actual !== null && isTruthy(actual) === expected;
  if (expected === null) return actual === null;
  if (!isOperatorObject(expected)) return sameJson(actual, expected, steps);
  return Object.entries(expected).every(([operator, operand]) => {
    steps.take(1);
    return operatorHolds(operator, actual, operand, steps);
  });
}

/** Both sides serialise to the same JSON; each serialisation costs a step per character. */
function sameJson(actual: unknown, expected: unknown, steps: Steps): boolean {
  const left = JSON.stringify(actual) ?? '';
  steps.take(left.length);
  const right = JSON.stringify(expected) ?? '';
  steps.take(right.length);
  return left === right;
}

function operatorHolds(operator: string, actual: unknown, operand: unknown, steps: Steps): boolean {
  switch (operator) {
    case '$eq':
      return strictlyEqual(actual, operand);
    case '$ne':
      return !strictlyEqual(actual, operand);
    case '$lt':
      return compare(asTextFirst(actual, steps), '<', asTextFirst(operand, steps));
    case '$lte':
      return compare(asTextFirst(actual, steps), '<=', asTextFirst(operand, steps));
    case '$gt':
      return compare(asTextFirst(actual, steps), '>', asTextFirst(operand, steps));
    case '$gte':
      return compare(asTextFirst(actual, steps), '>=', asTextFirst(operand, steps));
    case '$veq':
      return paddedVersion(actual) === paddedVersion(operand);
    case '$vne':
      return paddedVersion(actual) !== paddedVersion(operand);
    case '$vgt':
      return paddedVersion(actual) > paddedVersion(operand);
    case '$vgte':
      return paddedVersion(actual) >= paddedVersion(operand);
    case '$vlt':
      return paddedVersion(actual) < paddedVersion(operand);
    case '$vlte':
      return paddedVersion(actual) <= paddedVersion(operand);
    case '$in':
      return Array.isArray(operand) && isIn(actual, operand, false, steps);
    case '$nin':
      return Array.isArray(operand) && !isIn(actual, operand, false, steps);
    case '$ini':
      return Array.isArray(operand) && isIn(actual, operand, true, steps);
    case '$nini':
      return Array.isArray(operand) && !isIn(actual, operand, true, steps);
    case '$all':
      return Array.isArray(operand) && hasAll(actual, operand, false, steps);
    case '$alli':
      return Array.isArray(operand) && hasAll(actual, operand, true, steps);
    case '$size':
      return Array.isArray(actual) && valueMatches(actual.length, operand, false, steps);
    case '$elemMatch':
      return Array.isArray(actual) && someElementMatches(actual, operand, steps);
    case '$exists':
      return isTruthy(operand) ? actual !== null && actual !== undefined : actual === null || actual === undefined;
    case '$type':
      return typeName(actual) === operand;
    case '$not':
      return !valueMatches(actual, operand, false, steps);
    case '$regex':
      return patternFinds(operand, steps.text(actual), false, steps);
    case '$regexi':
      return patternFinds(operand, steps.text(actual), true, steps);
    default:
      return false; // an unknown operator
  }
}

/** The pattern matches somewhere in the text: (characters + 1) × its instructions × 4 steps, taken before it runs. */
function patternFinds(pattern: unknown, text: string, caseInsensitive: boolean, steps: Steps): boolean {
  const compiled = typeof pattern === 'string' ? compilePattern(pattern, caseInsensitive) : null;
  if (!compiled) return false;
  steps.take((text.length + 1) * compiled.instructions * CONDITION_LIMITS.patternStepWeight);
  return compiled.finds(text);
}

const foldCase = (value: unknown): unknown => (typeof value === 'string' ? value.toLowerCase() : value);

/** The value is one of the list's elements, or, for an array value, shares one with it: a step for each of both. */
function isIn(actual: unknown, list: unknown[], caseInsensitive: boolean, steps: Steps): boolean {
  const candidates = Array.isArray(actual) ? actual : [actual];
  steps.take(candidates.length + list.length);
  const fold = caseInsensitive ? foldCase : (value: unknown) => value;
  // A Set finds by SameValueZero, which is `===` for everything but NaN (no JSON value).
  const elements = new Set(list.map(fold));
  return candidates.some((candidate) => !Number.isNaN(candidate) && elements.has(fold(candidate)));
}

/** The value is an array and every expected literal or operator object holds for one of its elements: a step per pair tried. */
function hasAll(actual: unknown, expected: unknown[], caseInsensitive: boolean, steps: Steps): boolean {
  if (!Array.isArray(actual)) return false;
  return expected.every((wanted) =>
    actual.some((element) => {
      steps.take(1);
      return valueMatches(element, wanted, caseInsensitive, steps);
    }),
  );
}

/** One element other than null satisfies the operators, or the condition read inside the element: a step per element tried. */
function someElementMatches(actual: unknown[], operand: unknown, steps: Steps): boolean {
  const matches = isOperatorObject(operand)
    ? (element: unknown) => valueMatches(element, operand, false, steps)
    : (element: unknown) => holds(operand, element, steps);
  return actual.some((element) => {
    if (element === null || element === undefined) return false;
    steps.take(1);
    return matches(element);
  });
}
