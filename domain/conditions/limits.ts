/** The bounds of a condition; the contract (openapi/components/schemas/Condition*.yaml) states the same numbers. */
export const CONDITION_LIMITS = {
  /** Nesting: the condition is level 1, every object or array value inside adds one. */
  depth: 12,
  /** JSON values in all (objects, arrays, scalars; keys not counted). */
  values: 2000,
  /** `$regex` and `$regexi` operators in one condition. */
  patterns: 20,
  /** `$regex` and `$regexi` operators in all the conditions of one request (a flag's rules): what one request may compile. */
  patternsPerRequest: 50,
  keysPerObject: 50,
  itemsPerArray: 1000,
  pathLength: 200,
  stringLength: 1000,
  patternLength: 500,
  /** RE2 instructions a compiled pattern may hold: matching costs up to input × instructions (`.{1000}` is 1002). */
  patternInstructions: 500,
  versionLength: 100,
  /** Steps one evaluation of one condition may take (evaluate.ts counts them as the contract states); past them it does not hold. */
  evaluationSteps: 20_000,
  /** Steps a pattern takes per character and instruction (re2js building its automaton costs several times a character copied). */
  patternStepWeight: 4,
} as const;
