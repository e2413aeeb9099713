/**
 * JavaScript's own conversions and comparisons, which GrowthBook's condition language inherits:
 * a condition compares an attribute the way `value + ''`, `value * 1`, `a < b` and `===` would.
 * Named here so the evaluator reads as the rules it implements.
 */

/** `String(v)`: `null` → "null", `[1, "a"]` → "1,a", numbers in their shortest form. */
export function asString(value: unknown): string {
  return String(value);
}

/** `Number(v)`: `null`, `false`, `""`, `[]` → 0; `" 12 "` → 12; `"0x10"` → 16; otherwise NaN. */
export function asNumber(value: unknown): number {
  return Number(value);
}

export function isTruthy(value: unknown): boolean {
  return Boolean(value);
}

/** `===`: same type and value; arrays and objects are never equal to a value from elsewhere. */
export function strictlyEqual(a: unknown, b: unknown): boolean {
  return a === b;
}

type Relation = '<' | '<=' | '>' | '>=';

/** JavaScript's relational operators: strings by UTF-16 code units, otherwise as numbers (NaN is false). */
export function compare(a: unknown, relation: Relation, b: unknown): boolean {
  const left = a as string;
  const right = b as string;
  switch (relation) {
    case '<':
      return left < right;
    case '<=':
      return left <= right;
    case '>':
      return left > right;
    case '>=':
      return left >= right;
  }
}

/** `typeof`, with `null` and arrays told apart. */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
