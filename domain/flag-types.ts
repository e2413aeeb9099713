/**
 * A flag's type (the contract's FlagType) and how its values, kept as text in `value` and in its
 * rules, read as that type: `string` as the text itself, `boolean` as `true` or `false`, `number`
 * as a finite JSON number, `json` as JSON text of an object.
 */
import type { components } from '../generated/api';

export type FlagType = components['schemas']['FlagType'];
/** A JSON object, as a `json` flag serves it. */
export interface FlagObject {
  readonly [key: string]: unknown;
}
/** What a flag serves, read as its type. */
export type TypedValue = string | number | boolean | FlagObject;

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** The value read as the type, or undefined when the text is not one (null stays null). */
export function readFlagValue(type: FlagType, text: string | null): TypedValue | null | undefined {
  if (text === null) return null;
  switch (type) {
    case 'string':
      return text;
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : undefined;
    case 'number': {
      const number = NUMBER.test(text) ? Number(text) : NaN;
      return Number.isFinite(number) ? number : undefined;
    }
    case 'json':
      return jsonObject(text);
  }
}

/** Why the text is not a value of the type, or undefined when it is. */
export function flagValueProblem(type: FlagType, text: string | null): string | undefined {
  if (readFlagValue(type, text) !== undefined) return undefined;
  switch (type) {
    case 'boolean':
      return "must be 'true' or 'false' for a boolean flag";
    case 'number':
      return 'must be a finite JSON number (such as 0.25) for a number flag';
    default:
      return 'must be the JSON text of an object (such as {"limit": 10}) for a json flag';
  }
}

function jsonObject(text: string): FlagObject | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? deepFreeze(parsed as FlagObject) : undefined;
  } catch {
    return undefined;
  }
}

/** A served object is shared by every caller that reads the flag: none may change it for the others. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
