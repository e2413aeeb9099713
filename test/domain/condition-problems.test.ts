import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONDITION_LIMITS, conditionProblems } from '../../domain/conditions';

const AT = '/body/conditions';
const { cases } = JSON.parse(readFileSync(new URL('../vectors/conditions.json', import.meta.url), 'utf8')) as {
  cases: Array<{ name: string; condition: unknown; growthbook?: string }>;
};

/** A condition nested `levels` deep: the condition, then a $not per level. */
function nested(levels: number): unknown {
  let condition: unknown = { a: 1 };
  for (let level = 1; level < levels; level++) condition = { $not: condition };
  return condition;
}

describe('conditionProblems', () => {
  it('when a condition is well-formed, then there is no problem', () => {
    const condition = {
      country: { $in: ['DE', 'AT'] },
      app_version: { $vgte: '2.4.0', $vlt: 3 },
      $or: [{ plan: 'pro' }, { tags: { $elemMatch: { $eq: 'beta' } } }, { 'tags.0': ['a', 1, true, null] }],
      $nor: [{ email: { $regexi: '@example\\.com$' } }],
      $not: { age: { $not: { $gte: 18 } } },
      scores: { $all: ['1', { $gt: 5 }], $size: { $lte: 10 }, $exists: true, $type: 'array' },
      items: { $elemMatch: { id: 2, kind: { $ne: null } } },
    };
    expect(conditionProblems(condition, AT)).toEqual([]);
  });

  it('when the vectors meant for the language (not the malformed ones) are checked, then those with known operators and compiling patterns pass', () => {
    const problems = cases.filter((vector) => !vector.growthbook && conditionProblems(vector.condition, AT).length === 0);
    expect(problems.length).toBeGreaterThan(150);
  });

  it.each([
    ['a condition that is not an object', ['a'], AT, 'must be an object (a condition)'],
    ['an unknown operator', { a: { $foo: 1 } }, `${AT}/a/$foo`, 'is not an operator'],
    ['an unknown logical operator', { $xor: [] }, `${AT}/$xor`, 'is not a logical operator ($and, $or, $nor, $not); an attribute path must not start with $'],
    ['$and that is not an array', { $and: { a: 1 } }, `${AT}/$and`, 'must be an array of conditions'],
    ['a condition in $or that is not an object', { $or: [{ a: 1 }, 5] }, `${AT}/$or/1`, 'must be an object (a condition)'],
    ['$in that is not an array', { a: { $in: 'abc' } }, `${AT}/a/$in`, 'must be an array of values'],
    ['an object inside $in', { a: { $in: ['x', { y: 1 }] } }, `${AT}/a/$in/1`, 'must be a string, a number, a boolean or null'],
    ['an empty operator object', { a: {} }, `${AT}/a`, 'must hold at least one operator'],
    ['$exists that is not a boolean', { a: { $exists: 1 } }, `${AT}/a/$exists`, 'must be a boolean'],
    ['an unknown $type', { a: { $type: 'date' } }, `${AT}/a/$type`, 'must be one of string, number, boolean, array, object, null, undefined'],
    ['a pattern RE2 refuses (lookahead)', { a: { $regex: 'a(?=b)' } }, `${AT}/a/$regex`, 'must be a regular expression in RE2 syntax (no lookaround or backreferences) that compiles to at most 500 instructions'],
    ['a pattern that does not compile', { a: { $regexi: '[' } }, `${AT}/a/$regexi`, 'must be a regular expression in RE2 syntax (no lookaround or backreferences) that compiles to at most 500 instructions'],
    ['a pattern that compiles to more than 500 instructions', { a: { $regex: '.{1000}' } }, `${AT}/a/$regex`, 'must be a regular expression in RE2 syntax (no lookaround or backreferences) that compiles to at most 500 instructions'],
    ['a pattern that is not a string', { a: { $regex: 5 } }, `${AT}/a/$regex`, 'must be a string (a regular expression)'],
    ['a comparison with a boolean', { a: { $gt: true } }, `${AT}/a/$gt`, 'must be a string or a number'],
    ['a version that is not a string or number', { a: { $veq: ['1'] } }, `${AT}/a/$veq`, 'must be a version string or a number'],
    ['a number that is not finite', { a: { $lt: Infinity } }, `${AT}/a/$lt`, 'must be a finite number'],
    ['a string over 1000 characters', { a: 'x'.repeat(1001) }, `${AT}/a`, 'must be at most 1000 characters'],
    ['a pattern over 500 characters', { a: { $regex: 'x'.repeat(501) } }, `${AT}/a/$regex`, 'must be at most 500 characters'],
    ['a version over 100 characters', { a: { $vgt: '1'.repeat(101) } }, `${AT}/a/$vgt`, 'must be at most 100 characters'],
    ['a path over 200 characters', { ['p'.repeat(201)]: 1 }, `${AT}/${'p'.repeat(201)}`, 'must be an attribute path of at most 200 characters without NUL'],
    ['a path with a slash and a tilde (escaped in the pointer)', { 'a/b~c': { $bad: 1 } }, `${AT}/a~1b~0c/$bad`, 'is not an operator'],
    ['an $elemMatch whose keys all start with $ but are not operators', { a: { $elemMatch: { $and: [] } } }, `${AT}/a/$elemMatch/$and`, 'is not an operator'],
    ['an array of 1001 items', { a: { $in: Array.from({ length: 1001 }, (_, i) => i) } }, `${AT}/a/$in`, 'must have at most 1000 items'],
    ['an object of 51 keys', Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])), AT, 'must have at most 50 keys'],
  ])('when %s, then the problem names its path', (_, condition, path, message) => {
    expect(conditionProblems(condition, AT)).toContainEqual({ path, message });
  });

  it(`when a condition nests ${CONDITION_LIMITS.depth} levels, then it passes; one more, and the deepest level is named`, () => {
    expect(conditionProblems(nested(CONDITION_LIMITS.depth), AT)).toEqual([]);
    const problems = conditionProblems(nested(CONDITION_LIMITS.depth + 1), AT);
    expect(problems).toEqual([{ path: `${AT}${'/$not'.repeat(CONDITION_LIMITS.depth)}`, message: `must nest at most ${CONDITION_LIMITS.depth} levels` }]);
  });

  it(`when a condition holds more than ${CONDITION_LIMITS.values} values, then the condition is named`, () => {
    const lists = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`k${i}`, { $in: Array.from({ length: 700 }, (_, j) => j) }]));
    expect(conditionProblems(lists, AT)).toContainEqual({ path: AT, message: `must hold at most ${CONDITION_LIMITS.values} values (objects, arrays and scalars)` });
    const fewer = Object.fromEntries(Array.from({ length: 2 }, (_, i) => [`k${i}`, { $in: Array.from({ length: 900 }, (_, j) => j) }]));
    expect(conditionProblems(fewer, AT)).toEqual([]);
  });

  it(`when a condition holds more than ${CONDITION_LIMITS.patterns} patterns, then the condition is named`, () => {
    const patterns = (count: number) => ({ $or: Array.from({ length: count }, (_, i) => ({ email: { $regex: `^${i}` } })) });
    expect(conditionProblems(patterns(CONDITION_LIMITS.patterns), AT)).toEqual([]);
    expect(conditionProblems(patterns(CONDITION_LIMITS.patterns + 1), AT)).toEqual([{ path: AT, message: `must hold at most ${CONDITION_LIMITS.patterns} $regex and $regexi operators` }]);
  });

  it('when a condition has many problems, then at most 20 are listed', () => {
    const condition = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, { $bad: i }]));
    expect(conditionProblems(condition, AT)).toHaveLength(20);
  });
});

describe('the contract and the validator', () => {
  const schema = (name: string) => parse(readFileSync(new URL(`../../openapi/components/schemas/${name}.yaml`, import.meta.url), 'utf8'));

  it('when the schemas state a bound, then it is the validator\'s', () => {
    const condition = schema('Condition');
    expect(condition.maxProperties).toBe(CONDITION_LIMITS.keysPerObject);
    expect(condition.propertyNames.maxLength).toBe(CONDITION_LIMITS.pathLength);
    expect(condition.properties.$and.maxItems).toBe(CONDITION_LIMITS.itemsPerArray);
    expect(schema('ConditionScalar').maxLength).toBe(CONDITION_LIMITS.stringLength);
    expect(schema('ConditionComparable').maxLength).toBe(CONDITION_LIMITS.stringLength);
    expect(schema('ConditionList').maxItems).toBe(CONDITION_LIMITS.itemsPerArray);
    expect(schema('ConditionPattern').maxLength).toBe(CONDITION_LIMITS.patternLength);
    expect(schema('ConditionVersion').maxLength).toBe(CONDITION_LIMITS.versionLength);
    expect(schema('ConditionOperators').properties.$all.maxItems).toBe(CONDITION_LIMITS.itemsPerArray);
    const description = (condition.description as string).replace(/\s+/g, ' ');
    expect(description).toContain(`at most ${CONDITION_LIMITS.keysPerObject} keys per object`);
    expect(description).toContain(`at most ${CONDITION_LIMITS.depth} levels of nesting`);
    expect(description).toContain(`at most ${CONDITION_LIMITS.values} JSON values`);
    expect(description).toContain(`at most ${CONDITION_LIMITS.patterns} \`$regex\``);
    expect(description).toContain(`at most ${CONDITION_LIMITS.evaluationSteps} steps`);
  });
});
