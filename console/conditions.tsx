// A condition builder for the common cases — attribute, operator, value; all or any — that writes
// the contract's conditions (GrowthBook's condition language), with the raw JSON beside it,
// editable and checked; the server's problems for the field show under both.
import { useState } from 'preact/hooks';
import type { Problem, Schemas } from './session';
import { problemAt } from './ui';

type Condition = Schemas['Condition'];
const OPERATORS = {
  $eq: 'equals',
  $ne: 'does not equal',
  $in: 'is one of',
  $nin: 'is none of',
  $gt: '>',
  $gte: '≥',
  $lt: '<',
  $lte: '≤',
  $regex: 'matches',
  $exists: 'is set',
} as const;
type Operator = keyof typeof OPERATORS;
interface Row {
  attribute: string;
  operator: Operator;
  value: string;
}

/** A typed value from what was typed: numbers and booleans as such, else the text. */
function valueOf(text: string): string | number | boolean {
  if (text === 'true' || text === 'false') return text === 'true';
  return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
}
const textOf = (value: unknown): string => (Array.isArray(value) ? value.map(String).join(', ') : String(value));

function clause({ attribute, operator, value }: Row): Condition {
  if (operator === '$eq') return { [attribute]: valueOf(value) };
  if (operator === '$exists') return { [attribute]: { $exists: true } };
  if (operator === '$in' || operator === '$nin') return { [attribute]: { [operator]: value.split(',').map((item) => valueOf(item.trim())) } };
  return { [attribute]: { [operator]: operator === '$regex' ? value : valueOf(value) } };
}

export function conditionOf(rows: Row[], mode: 'all' | 'any'): Condition {
  const clauses = rows.filter((row) => row.attribute !== '').map(clause);
  if (clauses.length === 0) return {};
  if (clauses.length === 1) return clauses[0]!;
  return (mode === 'all' ? { $and: clauses } : { $or: clauses }) as Condition;
}

/** The builder's rows for a condition it can show; undefined for one beyond it (then only the JSON edits it). */
export function rowsOf(condition: Condition): { rows: Row[]; mode: 'all' | 'any' } | undefined {
  const entries = Object.entries(condition as Record<string, unknown>);
  if (entries.length === 0) return { rows: [], mode: 'all' };
  const [first] = entries;
  if (entries.length === 1 && (first![0] === '$and' || first![0] === '$or') && Array.isArray(first![1])) {
    const rows = (first![1] as Condition[]).map(rowOf);
    return rows.every((row): row is Row => row !== undefined) ? { rows, mode: first![0] === '$and' ? 'all' : 'any' } : undefined;
  }
  const row = rowOf(condition);
  return row && { rows: [row], mode: 'all' };
}

function rowOf(condition: Condition): Row | undefined {
  const entries = Object.entries(condition as Record<string, unknown>);
  if (entries.length !== 1 || entries[0]![0].startsWith('$')) return undefined;
  const [attribute, test] = entries[0]!;
  if (test === null || typeof test !== 'object' || Array.isArray(test)) return { attribute, operator: '$eq', value: textOf(test) };
  const parts = Object.entries(test as Record<string, unknown>);
  if (parts.length !== 1 || !(parts[0]![0] in OPERATORS)) return undefined;
  const [operator, value] = parts[0]! as [Operator, unknown];
  if (operator === '$exists' && value !== true) return undefined;
  return { attribute, operator, value: operator === '$exists' ? '' : textOf(value) };
}

export function ConditionEditor({ value, onChange, problem, path }: { value: Condition; onChange: (condition: Condition) => void; problem?: Problem; path: string }) {
  const shown = rowsOf(value);
  const [rows, setRows] = useState<Row[]>(shown?.rows ?? []);
  const [mode, setMode] = useState<'all' | 'any'>(shown?.mode ?? 'all');
  const [raw, setRaw] = useState(JSON.stringify(value, null, 2));
  const [rawProblem, setRawProblem] = useState<string>();
  const fromRows = (next: Row[], nextMode = mode) => {
    setRows(next);
    setMode(nextMode);
    const condition = conditionOf(next, nextMode);
    setRaw(JSON.stringify(condition, null, 2));
    setRawProblem(undefined);
    onChange(condition);
  };
  const serverProblem = problemAt(problem, path);
  const set = (i: number, change: Partial<Row>) => fromRows(rows.map((row, j) => (j === i ? { ...row, ...change } : row)));
  return (
    <fieldset class="conditions" data-path={path}>
      <legend>Who is targeted</legend>
      <div class="builder">
        {rows.length > 1 && (
          <label>
            Participants must match{' '}
            <select value={mode} onChange={(e) => fromRows(rows, e.currentTarget.value as 'all' | 'any')}>
              <option value="all">all of these</option>
              <option value="any">any of these</option>
            </select>
          </label>
        )}
        {rows.length === 0 && <p class="hint">Everyone: no condition.</p>}
        {rows.map((row, i) => (
          <div class="condition-row" key={i} role="group" aria-label={`Condition ${i + 1}`}>
            <input aria-label="Attribute" placeholder="attribute, e.g. country" value={row.attribute} onInput={(e) => set(i, { attribute: e.currentTarget.value })} />
            <select aria-label="Operator" value={row.operator} onChange={(e) => set(i, { operator: e.currentTarget.value as Operator })}>
              {Object.entries(OPERATORS).map(([op, label]) => (
                <option key={op} value={op}>
                  {label}
                </option>
              ))}
            </select>
            {row.operator !== '$exists' && <input aria-label="Value" placeholder={row.operator === '$in' || row.operator === '$nin' ? 'DE, AT' : 'value'} value={row.value} onInput={(e) => set(i, { value: e.currentTarget.value })} />}
            <button type="button" aria-label={`Remove condition ${i + 1}`} onClick={() => fromRows(rows.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        {shown || rows.length > 0 ? (
          <button type="button" onClick={() => fromRows([...rows, { attribute: '', operator: '$eq', value: '' }])}>
            Add a condition
          </button>
        ) : (
          <p class="hint">This condition is beyond the builder: edit its JSON.</p>
        )}
      </div>
      <label for={`${path}-json`}>Condition as JSON</label>
      <textarea
        id={`${path}-json`}
        class="code"
        rows={5}
        value={raw}
        aria-invalid={rawProblem !== undefined || serverProblem !== undefined}
        aria-describedby={`${path}-json-problem`}
        onInput={(e) => {
          const field = e.currentTarget;
          setRaw(field.value);
          try {
            const parsed = JSON.parse(field.value) as unknown;
            if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('a condition is a JSON object');
            setRawProblem(undefined);
            field.setCustomValidity('');
            const back = rowsOf(parsed as Condition);
            if (back) (setRows(back.rows), setMode(back.mode));
            onChange(parsed as Condition);
          } catch (error) {
            // The form is not sent while the text is not a condition: saving would store the last valid one instead.
            setRawProblem((error as Error).message);
            field.setCustomValidity(`Not a condition: ${(error as Error).message}`);
          }
        }}
      />
      {(rawProblem || serverProblem) && (
        <p class="field-problem" id={`${path}-json-problem`}>
          {rawProblem ?? serverProblem}
        </p>
      )}
    </fieldset>
  );
}
