// Whether a config the service sent can be decided from: every field the evaluator reads has the
// type the contract gives it. One pass over the config, without looking into conditions (their
// evaluation is total: a malformed condition does not hold) and ignoring fields the SDK does not
// know (the config only grows). A config that fails is not used; the last good one is kept.
import { isPlainObject } from '../domain/conditions/javascript';

interface Field {
  test(value: unknown): boolean;
  /** What the value must be, for the report. */
  is: string;
}

const STRING: Field = { test: (value) => typeof value === 'string', is: 'a string' };
const TEXT_OR_NULL: Field = { test: (value) => value === null || typeof value === 'string', is: 'a string or null' };
const NUMBER: Field = { test: (value) => typeof value === 'number' && Number.isFinite(value), is: 'a number' };
const BOOLEAN: Field = { test: (value) => typeof value === 'boolean', is: 'a boolean' };
const OBJECT: Field = { test: isPlainObject, is: 'an object' };
const ARRAY: Field = { test: Array.isArray, is: 'an array' };
const HASH_VERSION: Field = { test: (value) => value === 1 || value === 2, is: '1 or 2' };
const TEAM: Field = { test: (value) => Number.isSafeInteger(value) && (value as number) >= 1, is: 'a positive integer' };
const optional = (field: Field): Field => ({ test: (value) => value == null || field.test(value), is: `${field.is}, null or absent` });
const nullable = (field: Field): Field => ({ test: (value) => value === null || field.test(value), is: `${field.is} or null` });

const EXCLUSION_GROUP = { key: STRING, start: NUMBER, end: NUMBER };
const VARIANT = { key: STRING, traffic: NUMBER };
const EXPERIMENT = { key: STRING, seed: STRING, hash_version: HASH_VERSION, conditions: OBJECT, coverage: NUMBER, exclusion_group: nullable(OBJECT), event: STRING, variants: ARRAY };
const FEATURE = { key: STRING, enabled: BOOLEAN, type: optional(STRING), value: TEXT_OR_NULL, rules: optional(ARRAY), rollout: optional(OBJECT) };
const ROLLOUT = { seed: STRING, share: NUMBER, value: TEXT_OR_NULL, conditions: optional(OBJECT) };
const RULE = { type: STRING, conditions: optional(OBJECT), starts_at: optional(STRING), ends_at: optional(STRING) };
/** What each kind of rule reads besides RULE's; a kind this SDK does not know never applies. */
const RULE_KINDS: Record<string, Record<string, Field>> = {
  force: { value: TEXT_OR_NULL },
  rollout: { percentage: NUMBER, value: TEXT_OR_NULL },
  experiment: { experiment: STRING, variants: OBJECT },
};

/** Where the config is not what the contract says, as `/experiments/0/variants must be an array`; undefined when it is usable. */
export function configProblem(config: unknown): string | undefined {
  return (
    fieldsProblem(config, '', { team: TEAM, experiments: ARRAY, features: ARRAY }) ??
    itemsProblem((config as { experiments: unknown[] }).experiments, '/experiments', experimentProblem) ??
    itemsProblem((config as { features: unknown[] }).features, '/features', featureProblem)
  );
}

function experimentProblem(experiment: unknown, path: string): string | undefined {
  const checked = experiment as { exclusion_group: unknown; variants: unknown[] };
  return (
    fieldsProblem(experiment, path, EXPERIMENT) ??
    (checked.exclusion_group === null ? undefined : fieldsProblem(checked.exclusion_group, `${path}/exclusion_group`, EXCLUSION_GROUP)) ??
    itemsProblem(checked.variants, `${path}/variants`, (variant, at) => fieldsProblem(variant, at, VARIANT))
  );
}

function featureProblem(feature: unknown, path: string): string | undefined {
  const { rules, rollout } = feature as { rules?: unknown[] | null; rollout?: unknown };
  return fieldsProblem(feature, path, FEATURE) ?? itemsProblem(rules ?? [], `${path}/rules`, ruleProblem) ?? (rollout == null ? undefined : fieldsProblem(rollout, `${path}/rollout`, ROLLOUT));
}

function ruleProblem(rule: unknown, path: string): string | undefined {
  const problem = fieldsProblem(rule, path, RULE);
  if (problem) return problem;
  const { type, variants } = rule as { type: string; variants?: Record<string, unknown> };
  const kind = Object.hasOwn(RULE_KINDS, type) ? RULE_KINDS[type]! : {};
  return fieldsProblem(rule, path, kind) ?? (type === 'experiment' ? fieldsProblem(variants, `${path}/variants`, Object.fromEntries(Object.keys(variants!).map((key) => [key, TEXT_OR_NULL]))) : undefined);
}

function fieldsProblem(value: unknown, path: string, fields: Record<string, Field>): string | undefined {
  if (!isPlainObject(value)) return `${path || 'the config'} must be an object`;
  for (const [name, field] of Object.entries(fields)) {
    if (!field.test(value[name])) return `${path}/${name} must be ${field.is}`;
  }
  return undefined;
}

function itemsProblem(items: unknown[], path: string, problem: (item: unknown, path: string) => string | undefined): string | undefined {
  for (let index = 0; index < items.length; index++) {
    const found = problem(items[index], `${path}/${index}`);
    if (found) return found;
  }
  return undefined;
}
