import type { components } from '../../generated/api';
import { CONDITION_LIMITS, conditionShape, patternProblems, type PatternAt } from '../../domain/conditions';
import { flagValueProblem, type FlagType } from '../../domain/flag-types';
import { findExperiment } from '../experiments/store';
import { BadRequest, Conflict, NotFound } from '../http/errors';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';
import { variantsOf } from '../experiments/variants-store';

type Rule = components['schemas']['FeatureRule'];
type FieldError = components['schemas']['ProblemFieldError'];

/**
 * What the schema cannot say about a flag's rules, short of compiling their patterns (checkPatterns
 * does that last, being the costly part): 400 for a percentage with more than two decimals, a
 * schedule that ends before it starts, a malformed condition or more patterns than a request may
 * hold; 404 for an unknown experiment; 409 for a stopped one or a value for a variant it does not
 * have. Answers the patterns to compile.
 */
export async function checkRules(db: Db, team: TeamRow, rules: Rule[]): Promise<PatternAt[]> {
  const patterns: PatternAt[] = [];
  const problems = rules.flatMap((rule, index) => shapeProblems(rule, `/body/rules/${index}`, patterns));
  if (patterns.length > CONDITION_LIMITS.patternsPerRequest) {
    problems.push({ path: '/body/rules', message: `must hold at most ${CONDITION_LIMITS.patternsPerRequest} $regex and $regexi operators in all their conditions` });
  }
  throwProblems(problems);
  for (const [index, rule] of rules.entries()) {
    if (rule.type === 'experiment') await checkExperimentRule(db, team, rule, `/body/rules/${index}`);
  }
  return patterns;
}

/** 400 for the rules' patterns that RE2 refuses: compiled only once every other check has passed. */
export function checkPatterns(patterns: PatternAt[]): void {
  throwProblems(patternProblems(patterns));
}

function throwProblems(problems: FieldError[]): void {
  if (problems.length > 0) throw new BadRequest(problems.map((p) => `${p.path} ${p.message}`).join('; '), problems);
}

function shapeProblems(rule: Rule, path: string, patterns: PatternAt[]): FieldError[] {
  const shape = rule.conditions === undefined ? { problems: [], patterns: [] } : conditionShape(rule.conditions, `${path}/conditions`);
  patterns.push(...shape.patterns);
  const problems: FieldError[] = [...shape.problems];
  if (rule.type === 'rollout' && Math.abs(rule.percentage * 100 - Math.round(rule.percentage * 100)) > 1e-6) {
    problems.push({ path: `${path}/percentage`, message: 'must have at most two decimals' });
  }
  if (rule.starts_at != null && rule.ends_at != null && Date.parse(rule.ends_at) <= Date.parse(rule.starts_at)) {
    problems.push({ path: `${path}/ends_at`, message: 'must be after starts_at' });
  }
  return problems;
}

async function checkExperimentRule(db: Db, team: TeamRow, rule: Extract<Rule, { type: 'experiment' }>, path: string): Promise<void> {
  const experiment = await findExperiment(db, team.id, rule.experiment);
  if (!experiment) throw new NotFound(`${path}/experiment: no experiment '${rule.experiment}' in team ${team.id}.`);
  if (experiment.status === 'stopped') throw new Conflict(`${path}/experiment: experiment '${rule.experiment}' is stopped; a stopped experiment serves no one again.`);
  const variants = new Set((await variantsOf(db, team.id, experiment.id)).map((variant) => variant.key));
  const unknown = Object.keys(rule.variants).find((key) => !variants.has(key));
  if (unknown !== undefined) throw new Conflict(`${path}/variants/${unknown}: experiment '${rule.experiment}' has no variant '${unknown}'.`);
}

/** The values a flag will have, each marked as given in the request or already stored. */
export interface FlagValues {
  type: FlagType;
  value: { text: string | null; given: boolean };
  rules: { list: Rule[]; given: boolean };
}

/**
 * 400 when a value does not read as the flag's type, naming its field: the request's own
 * (`/body/value`, `/body/rules/0/value`), or `/body/type` for a stored value a type change left
 * behind — nothing is converted.
 */
export function checkValues({ type, value, rules }: FlagValues): void {
  const problems: FieldError[] = [];
  const check = (text: string | null, path: string, given: boolean) => {
    const problem = flagValueProblem(type, text);
    if (problem === undefined) return;
    problems.push(given ? { path, message: problem } : { path: '/body/type', message: `the stored ${path.slice('/body/'.length)} ${JSON.stringify(text)} does not read as ${type}: give new values with the type` });
  };
  check(value.text, '/body/value', value.given);
  for (const [index, rule] of rules.list.entries()) {
    if (rule.type !== 'experiment') check(rule.value, `/body/rules/${index}/value`, rules.given);
    else for (const [variant, text] of Object.entries(rule.variants)) check(text ?? null, `/body/rules/${index}/variants/${variant}`, rules.given);
  }
  if (problems.length > 0) throw new BadRequest(problems.map((p) => `${p.path} ${p.message}`).join('; '), problems);
}

/** The rules as stored: JSON text, '[]' for none. */
export function rulesText(rules: Rule[]): string {
  return JSON.stringify(rules);
}

/** What a flag adds to its team's config and is counted against the flag-value limit: its value and its rules. */
export function flagText(value: string | null | undefined, rules: Rule[] | undefined): string {
  return (value ?? '') + (rules && rules.length > 0 ? rulesText(rules) : '');
}
