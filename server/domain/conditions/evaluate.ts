/**
 * GrowthBook's condition language, evaluated as its JavaScript SDK evaluates it. The rules are
 * stated in openapi/components/schemas/Condition.yaml; test/vectors/conditions.json holds the
 * cases a reimplementation must agree with.
 */
import type { components } from '../../../generated/api';
import { asNumber, asString, compare, isPlainObject, isTruthy, strictlyEqual, typeName } from './javascript';
import { patternFinds } from './pattern';
import { paddedVersion } from './version';

export type Condition = components['schemas']['Condition'];
/** What a condition reads: a participant's attributes (any JSON object: paths may go into nested objects and arrays). */
export type ConditionAttributes = Readonly<Record<string, unknown>>;

/** Whether the attributes satisfy the condition. Total: a malformed condition is false, never an error. */
export function evaluateCondition(condition: Condition, attributes: ConditionAttributes): boolean {
  try {
    return holds(condition, attributes);
  } catch {
    return false; // only for inputs no JSON document holds (cycles, exotic objects)
  }
}

function holds(condition: unknown, subject: unknown): boolean {
  if (!isPlainObject(condition)) return false;
  for (const [key, operand] of Object.entries(condition)) {
    if (!keyHolds(key, operand, subject)) return false;
  }
  return true;
}

function keyHolds(key: string, operand: unknown, subject: unknown): boolean {
  switch (key) {
    case '$and':
      return Array.isArray(operand) && operand.every((condition) => holds(condition, subject));
    case '$or':
      return Array.isArray(operand) && anyHolds(operand, subject);
    case '$nor':
      return Array.isArray(operand) && !anyHolds(operand, subject);
    case '$not':
      return !holds(operand, subject);
    default:
      if (key.startsWith('$')) return false; // an unknown logical operator
      return valueMatches(valueAt(subject, key), operand, false);
  }
}

/** `$or`: one of the conditions holds, or there are none. */
function anyHolds(conditions: unknown[], subject: unknown): boolean {
  return conditions.length === 0 || conditions.some((condition) => holds(condition, subject));
}

/** The value at a dotted path: own properties of objects, indices and `length` of arrays; null when absent. */
function valueAt(subject: unknown, path: string): unknown {
  let current = subject;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, part)) return null;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key.startsWith('$'));
}

/** A value against a literal or an operator object; `caseInsensitive` (from `$alli`) applies to string literals. */
function valueMatches(actual: unknown, expected: unknown, caseInsensitive: boolean): boolean {
  if (typeof expected === 'string') {
    return caseInsensitive ? asString(actual).toLowerCase() === expected.toLowerCase() : asString(actual) === expected;
  }
  if (typeof expected === 'number') return asNumber(actual) === expected;
  if (typeof expected === 'boolean') return actual !== null && isTruthy(actual) === expected;
  if (expected === null) return actual === null;
  if (!isOperatorObject(expected)) return JSON.stringify(actual) === JSON.stringify(expected);
  return Object.entries(expected).every(([operator, operand]) => operatorHolds(operator, actual, operand));
}

function operatorHolds(operator: string, actual: unknown, operand: unknown): boolean {
  switch (operator) {
    case '$eq':
      return strictlyEqual(actual, operand);
    case '$ne':
      return !strictlyEqual(actual, operand);
    case '$lt':
      return compare(actual, '<', operand);
    case '$lte':
      return compare(actual, '<=', operand);
    case '$gt':
      return compare(actual, '>', operand);
    case '$gte':
      return compare(actual, '>=', operand);
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
      return Array.isArray(operand) && isIn(actual, operand, false);
    case '$nin':
      return Array.isArray(operand) && !isIn(actual, operand, false);
    case '$ini':
      return Array.isArray(operand) && isIn(actual, operand, true);
    case '$nini':
      return Array.isArray(operand) && !isIn(actual, operand, true);
    case '$all':
      return Array.isArray(operand) && hasAll(actual, operand, false);
    case '$alli':
      return Array.isArray(operand) && hasAll(actual, operand, true);
    case '$size':
      return Array.isArray(actual) && valueMatches(actual.length, operand, false);
    case '$elemMatch':
      return Array.isArray(actual) && someElementMatches(actual, operand);
    case '$exists':
      return isTruthy(operand) ? actual !== null && actual !== undefined : actual === null || actual === undefined;
    case '$type':
      return typeName(actual) === operand;
    case '$not':
      return !valueMatches(actual, operand, false);
    case '$regex':
      return patternFinds(operand, asString(actual), false);
    case '$regexi':
      return patternFinds(operand, asString(actual), true);
    default:
      return false; // an unknown operator
  }
}

const foldCase = (value: unknown): unknown => (typeof value === 'string' ? value.toLowerCase() : value);

/** The value is one of the list's elements, or, for an array value, shares one with it. */
function isIn(actual: unknown, list: unknown[], caseInsensitive: boolean): boolean {
  const candidates = Array.isArray(actual) ? actual : [actual];
  const fold = caseInsensitive ? foldCase : (value: unknown) => value;
  return candidates.some((candidate) => list.some((element) => strictlyEqual(fold(candidate), fold(element))));
}

/** The value is an array and every expected literal or operator object holds for one of its elements. */
function hasAll(actual: unknown, expected: unknown[], caseInsensitive: boolean): boolean {
  if (!Array.isArray(actual)) return false;
  return expected.every((wanted) => actual.some((element) => valueMatches(element, wanted, caseInsensitive)));
}

/** One element other than null satisfies the operators, or the condition read inside the element. */
function someElementMatches(actual: unknown[], operand: unknown): boolean {
  const matches = isOperatorObject(operand)
    ? (element: unknown) => valueMatches(element, operand, false)
    : (element: unknown) => holds(operand, element);
  return actual.some((element) => element !== null && element !== undefined && matches(element));
}
