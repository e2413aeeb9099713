import type { components } from '../../generated/api';
import type { GroupRange } from '../../domain/exclusion-groups';
import { conditionProblems, type Condition } from '../../domain/conditions';
import { isInHundredths, toHundredths, toPercent } from '../../domain/coverage';
import type { Targeting } from '../../domain/eligibility';
import { BadRequest } from '../http/errors';
import type { Selectable } from 'kysely';
import type { Database } from '../storage/schema';

type ExclusionGroup = components['schemas']['ExclusionGroup'];

/** The targeting columns a create or update writes, validated (400 naming the field otherwise). */
export interface TargetingColumns {
  conditions?: string;
  coverage?: number;
  group_key?: string | null;
  group_start?: number | null;
  group_end?: number | null;
}

/** Checks what the schema cannot say (two decimals at most, start < end) and converts percents to stored hundredths. */
export function targetingColumns(input: { conditions?: Condition; coverage?: number; exclusion_group?: ExclusionGroup }): TargetingColumns {
  const problems: Array<{ path: string; message: string }> = [];
  const columns: TargetingColumns = {};
  if (input.conditions !== undefined) {
    problems.push(...conditionProblems(input.conditions, '/body/conditions'));
    columns.conditions = JSON.stringify(input.conditions);
  }
  const hundredths = (value: number, path: string) => {
    if (!isInHundredths(value)) problems.push({ path, message: 'must be a multiple of 0.01 (at most two decimals)' });
    return toHundredths(value);
  };
  if (input.coverage !== undefined) columns.coverage = hundredths(input.coverage, '/body/coverage');
  const group = input.exclusion_group;
  if (group === null) Object.assign(columns, { group_key: null, group_start: null, group_end: null });
  else if (group !== undefined) {
    const start = hundredths(group.start, '/body/exclusion_group/start');
    const end = hundredths(group.end, '/body/exclusion_group/end');
    if (start >= end) problems.push({ path: '/body/exclusion_group/end', message: 'must be greater than start' });
    Object.assign(columns, { group_key: group.key, group_start: start, group_end: end });
  }
  if (problems.length > 0) throw new BadRequest(problems.map((p) => `${p.path} ${p.message}`).join('; '), problems);
  return columns;
}

/** An experiment's stored row (as the store reads it, which imports this file). */
type ExperimentRow = Selectable<Database['experiments']>;

/** The stored range of the experiment's exclusion group, in hundredths, or null. */
export function groupRangeOf(row: Pick<ExperimentRow, 'group_key' | 'group_start' | 'group_end'>): GroupRange | null {
  return row.group_key === null ? null : { key: row.group_key, start: row.group_start!, end: row.group_end! };
}

/** The exclusion group as answered, in percent. */
export function exclusionGroupOf(row: ExperimentRow): ExclusionGroup {
  const range = groupRangeOf(row);
  return range && { key: range.key, start: toPercent(range.start), end: toPercent(range.end) };
}

/** The experiment's conditions; `{}` (everyone) when none were stored. */
export function conditionsOf(row: Pick<ExperimentRow, 'conditions'>): Condition {
  return row.conditions === null ? {} : (JSON.parse(row.conditions) as Condition);
}

// Ingest decides many participants against the same rows of a config version: each is read once.
const targetings = new WeakMap<ExperimentRow, Targeting>();

/** What the domain needs to admit participants to the experiment. */
export function targetingOf(row: ExperimentRow): Targeting {
  let targeting = targetings.get(row);
  if (!targeting) {
    targeting = { seed: row.seed, hashVersion: row.hash_version, coverage: row.coverage, group: groupRangeOf(row), conditions: conditionsOf(row) };
    targetings.set(row, targeting);
  }
  return targeting;
}
