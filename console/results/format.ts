// Numbers for people: rounded with sense, never "−0", never "100.0 %" for what is only nearly sure.
import type { Schemas } from '../session';

/** A no-break space between a number and its unit, so that a cell never wraps inside a value. */
export const NBSP = '\u00a0';

export const VERDICTS: Record<NonNullable<Schemas['CorrectedVerdict']>, string> = {
  collecting: 'collecting data',
  no_difference: 'no difference shown',
  variant_better: 'variant better',
  variant_worse: 'variant worse',
  guardrail_violated: 'guardrail violated',
};

/** What a decision judges, in words. */
export const METRICS: Record<Schemas['JudgedMetric'], string> = {
  unique_conversion_rate: 'conversion rate',
  mean: 'mean per participant',
};

const CORRECTIONS: Record<Schemas['Decision'] extends infer D ? (D extends { correction: infer C } ? C & string : never) : never, string> = {
  holm: 'Holm-corrected across the variants',
  benjamini_hochberg: 'Benjamini–Hochberg-corrected across the secondary events',
  none: 'uncorrected, one-sided toward harm',
};
export const correctionText = (correction: keyof typeof CORRECTIONS): string => CORRECTIONS[correction];

/** `value` with `digits` decimals, without a sign on a value that rounds to zero. */
function fixed(value: number, digits: number): string {
  const text = value.toFixed(digits);
  return Number(text) === 0 ? (0).toFixed(digits) : text;
}

/** A share as a percentage; `extremes` writes what rounds to 0 or 100 as "< 0.1 %" / "> 99.9 %". */
export function percent(value: number | null | undefined, digits = 1, extremes = false): string {
  if (value === null || value === undefined) return '—';
  const bound = 10 ** -digits;
  if (extremes && value * 100 > 100 - bound) return `>${NBSP}${(100 - bound).toFixed(digits)}${NBSP}%`;
  if (extremes && value * 100 < bound) return `<${NBSP}${bound.toFixed(digits)}${NBSP}%`;
  return `${fixed(value * 100, digits)}${NBSP}%`;
}

/** A difference of rates in percentage points, signed, "0.00 pp" when it rounds to zero. */
export function points(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined) return '—';
  const text = fixed(Math.abs(value * 100), digits);
  return `${Number(text) === 0 ? '' : value > 0 ? '+' : '−'}${text}${NBSP}pp`;
}

/** A difference of means, signed. */
export function signed(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined) return '—';
  const text = fixed(Math.abs(value), digits);
  return `${Number(text) === 0 ? '' : value > 0 ? '+' : '−'}${text}`;
}

export const number = (value: number | null | undefined): string => (value === null || value === undefined ? '—' : fixed(value, Math.abs(value) < 10 ? 3 : 2));

/** A p-value: three decimals, "< 0.001" below. */
export const pValue = (value: number | null | undefined): string => (value === null || value === undefined ? '—' : value < 0.001 ? `<${NBSP}0.001` : value.toFixed(3));

/** How long an experiment has run: hours under a day, else days with one decimal. */
export function duration(days: number | null): string {
  if (days === null) return '—';
  if (days < 1 / 24) return `<${NBSP}1 hour`;
  if (days < 1) return `${Math.round(days * 24)} hours`;
  return `${days.toFixed(1)} days`;
}

/** Goal first, then guardrails, then the rest, each group in the order the API gives. */
export function byRole<T extends { role: Schemas['EventRole'] }>(events: readonly T[]): T[] {
  const rank = { goal: 0, guardrail: 1, secondary: 2 } as const;
  return [...events].sort((a, b) => rank[a.role] - rank[b.role]);
}

/** A variant's name, marked when it is the control, unless its name says so already. */
export const variantName = (v: { variant: string; control: boolean }): string => (v.control && v.variant.toLowerCase() !== 'control' ? `${v.variant} (control)` : v.variant);

/** Round tick values covering [low, high], about `count` of them, and their step. */
export function niceTicks(low: number, high: number, count: number): { ticks: number[]; step: number } {
  const span = high - low || Math.abs(high) || 1;
  const raw = span / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let value = Math.floor(low / step) * step; value <= Math.ceil(high / step) * step + step / 2; value += step) ticks.push(Number(value.toPrecision(12)));
  return { ticks, step };
}

/** The decimals that write values `step` apart exactly (×100 for percentages). */
export const decimalsFor = (step: number, scale = 100): number => (String(Number((step * scale).toPrecision(6))).split('.')[1] ?? '').length;
