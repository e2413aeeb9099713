/** The bounds of a condition; the contract (openapi/components/schemas/Condition*.yaml) states the same numbers. */
export const CONDITION_LIMITS = {
  /** Nesting: the condition is level 1, every object or array value inside adds one. */
  depth: 12,
  /** JSON values in all (objects, arrays, scalars; keys not counted). */
  values: 2000,
  /** `$regex` and `$regexi` operators in one condition. */
  patterns: 20,
  keysPerObject: 50,
  itemsPerArray: 1000,
  pathLength: 200,
  stringLength: 1000,
  patternLength: 500,
  /** RE2 instructions a compiled pattern may hold: matching costs up to input × instructions (`.{1000}` is 1002). */
  patternInstructions: 500,
  versionLength: 100,
} as const;
