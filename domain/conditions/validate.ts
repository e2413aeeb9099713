/**
 * Whether a JSON value is a condition the service accepts: the shape and bounds of
 * openapi/components/schemas/Condition.yaml, plus what JSON Schema cannot say — nesting depth,
 * the number of values and of patterns, and that each pattern compiles on RE2. Compiling is the
 * costly part, so it comes last: `conditionShape` checks everything else and lists the patterns,
 * `patternProblems` compiles them.
 */
import { isPlainObject } from './javascript';
import { CONDITION_LIMITS as LIMITS } from './limits';
import { compilePattern } from './pattern';

export interface ConditionProblem {
  /** JSON pointer to the offending value, under the `path` given for the condition. */
  path: string;
  message: string;
}

const LOGICAL = new Set(['$and', '$or', '$nor', '$not']);
const TYPE_NAMES = ['string', 'number', 'boolean', 'array', 'object', 'null', 'undefined'];
const MAX_PROBLEMS = 20;

type OperandCheck = (walk: Walk, operand: unknown, path: string, depth: number) => void;

const scalar: OperandCheck = (walk, operand, path) => walk.scalar(operand, path, LIMITS.stringLength);
const comparable: OperandCheck = (walk, operand, path) => {
  if (typeof operand !== 'string' && typeof operand !== 'number') walk.problem(path, 'must be a string or a number');
  else walk.scalar(operand, path, LIMITS.stringLength);
};
const version: OperandCheck = (walk, operand, path) => {
  if (typeof operand !== 'string' && typeof operand !== 'number') walk.problem(path, 'must be a version string or a number');
  else walk.scalar(operand, path, LIMITS.versionLength);
};
const list: OperandCheck = (walk, operand, path, depth) => walk.array(operand, path, depth, (item, at) => walk.scalar(item, at, LIMITS.stringLength));
const values: OperandCheck = (walk, operand, path, depth) => walk.array(operand, path, depth, (item, at) => walk.value(item, at, depth + 1));
const value: OperandCheck = (walk, operand, path, depth) => walk.value(operand, path, depth);
const pattern: OperandCheck = (walk, operand, path) => walk.pattern(operand, path);

const OPERATORS: Record<string, OperandCheck> = {
  $eq: scalar,
  $ne: scalar,
  $gt: comparable,
  $gte: comparable,
  $lt: comparable,
  $lte: comparable,
  $in: list,
  $nin: list,
  $ini: list,
  $nini: list,
  $all: values,
  $alli: values,
  $size: value,
  $elemMatch: (walk, operand, path, depth) => {
    // As in GrowthBook: an object whose keys all start with $ is operators on the element, any other a condition inside it.
    if (isPlainObject(operand) && Object.keys(operand).length > 0 && Object.keys(operand).every((key) => key.startsWith('$'))) walk.value(operand, path, depth);
    else walk.condition(operand, path, depth);
  },
  $exists: (walk, operand, path) => {
    walk.count();
    if (typeof operand !== 'boolean') walk.problem(path, 'must be a boolean');
  },
  $type: (walk, operand, path) => {
    walk.count();
    if (typeof operand !== 'string' || !TYPE_NAMES.includes(operand)) walk.problem(path, `must be one of ${TYPE_NAMES.join(', ')}`);
  },
  $not: value,
  $regex: pattern,
  $regexi: pattern,
  $veq: version,
  $vne: version,
  $vgt: version,
  $vgte: version,
  $vlt: version,
  $vlte: version,
};

/** A pattern a condition holds, at its JSON pointer. */
export interface PatternAt {
  path: string;
  pattern: string;
}

/** Every problem of a would-be condition (none when it is valid), each at its JSON pointer under `path`. */
export function conditionProblems(condition: unknown, path: string): ConditionProblem[] {
  const shape = conditionShape(condition, path);
  return shape.problems.length > 0 ? shape.problems : patternProblems(shape.patterns);
}

/** The problems found without compiling a pattern, and the patterns to compile when there are none. */
export function conditionShape(condition: unknown, path: string): { problems: ConditionProblem[]; patterns: PatternAt[] } {
  const walk = new Walk();
  walk.condition(condition, path, 1);
  if (walk.values > LIMITS.values) walk.problem(path, `must hold at most ${LIMITS.values} values (objects, arrays and scalars)`);
  if (walk.found.length > LIMITS.patterns) walk.problem(path, `must hold at most ${LIMITS.patterns} $regex and $regexi operators`);
  return { problems: walk.problems.slice(0, MAX_PROBLEMS), patterns: walk.found };
}

/** The patterns that RE2 refuses or that compile to more instructions than the limit, each compiled once. */
export function patternProblems(patterns: PatternAt[]): ConditionProblem[] {
  const problems: ConditionProblem[] = [];
  for (const { path, pattern } of patterns) {
    if (problems.length >= MAX_PROBLEMS) break;
    if (compilePattern(pattern, false) === null) {
      problems.push({ path, message: `must be a regular expression in RE2 syntax (no lookaround or backreferences) that compiles to at most ${LIMITS.patternInstructions} instructions` });
    }
  }
  return problems;
}

const pointer = (path: string, key: string | number) => `${path}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;

class Walk {
  problems: ConditionProblem[] = [];
  values = 0;
  /** The patterns met that are strings of a valid length, to compile once everything else holds. */
  found: PatternAt[] = [];

  problem(path: string, message: string): void {
    if (this.problems.length < MAX_PROBLEMS) this.problems.push({ path, message });
  }

  count(): void {
    this.values++;
  }

  /** Counts a nested value; false (with a problem) when it is too deep or there are too many to go on. */
  private enter(path: string, depth: number): boolean {
    this.values++;
    if (depth > LIMITS.depth) {
      this.problem(path, `must nest at most ${LIMITS.depth} levels`);
      return false;
    }
    return this.values <= LIMITS.values && this.problems.length < MAX_PROBLEMS;
  }

  condition(condition: unknown, path: string, depth: number): void {
    if (!this.enter(path, depth)) return;
    if (!isPlainObject(condition)) return this.problem(path, 'must be an object (a condition)');
    const entries = Object.entries(condition);
    if (entries.length > LIMITS.keysPerObject) this.problem(path, `must have at most ${LIMITS.keysPerObject} keys`);
    for (const [key, operand] of entries.slice(0, LIMITS.keysPerObject)) {
      const at = pointer(path, key);
      if (key === '$not') this.condition(operand, at, depth + 1);
      else if (LOGICAL.has(key)) this.array(operand, at, depth + 1, (item, itemAt) => this.condition(item, itemAt, depth + 2), 'conditions');
      else if (key.startsWith('$')) this.problem(at, 'is not a logical operator ($and, $or, $nor, $not); an attribute path must not start with $');
      else if (key.length > LIMITS.pathLength || key.includes('\0')) this.problem(at, `must be an attribute path of at most ${LIMITS.pathLength} characters without NUL`);
      else this.value(operand, at, depth + 1);
    }
  }

  value(operand: unknown, path: string, depth: number): void {
    if (Array.isArray(operand)) return this.array(operand, path, depth, (item, at) => this.scalar(item, at, LIMITS.stringLength));
    if (!isPlainObject(operand)) return this.scalar(operand, path, LIMITS.stringLength);
    if (!this.enter(path, depth)) return;
    const entries = Object.entries(operand);
    if (entries.length === 0) return this.problem(path, 'must hold at least one operator');
    if (entries.length > LIMITS.keysPerObject) this.problem(path, `must have at most ${LIMITS.keysPerObject} keys`);
    for (const [operator, operandOf] of entries.slice(0, LIMITS.keysPerObject)) {
      const check = Object.hasOwn(OPERATORS, operator) ? OPERATORS[operator] : undefined;
      if (check) check(this, operandOf, pointer(path, operator), depth + 1);
      else this.problem(pointer(path, operator), 'is not an operator');
    }
  }

  array(operand: unknown, path: string, depth: number, item: (value: unknown, path: string) => void, what = 'values'): void {
    if (!this.enter(path, depth)) return;
    if (!Array.isArray(operand)) return this.problem(path, `must be an array of ${what}`);
    if (operand.length > LIMITS.itemsPerArray) return this.problem(path, `must have at most ${LIMITS.itemsPerArray} items`);
    operand.forEach((value, index) => item(value, pointer(path, index)));
  }

  scalar(operand: unknown, path: string, maxLength: number): void {
    this.values++;
    if (operand === null || typeof operand === 'boolean') return;
    if (typeof operand === 'number') {
      if (!Number.isFinite(operand)) this.problem(path, 'must be a finite number');
      return;
    }
    if (typeof operand !== 'string') return this.problem(path, 'must be a string, a number, a boolean or null');
    if (operand.length > maxLength) this.problem(path, `must be at most ${maxLength} characters`);
    else if (operand.includes('\0')) this.problem(path, 'must not contain NUL');
  }

  pattern(operand: unknown, path: string): void {
    this.values++;
    if (typeof operand !== 'string') return this.problem(path, 'must be a string (a regular expression)');
    this.found.push({ path, pattern: operand });
    if (operand.length > LIMITS.patternLength) return this.problem(path, `must be at most ${LIMITS.patternLength} characters`);
    if (operand.includes('\0')) return this.problem(path, 'must not contain NUL');
  }
}
