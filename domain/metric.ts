/**
 * What a participant contributes to a metric — pure functions. Values travel as numbers with at
 * most six decimals and are kept as integer micro-units (BigInt), so that sums never drift.
 */

/** Largest |value| an ingest may carry. */
export const MAX_VALUE = 1e9;
/** Decimals a value (or a cap) may have: the unit of storage is 10⁻⁶. */
export const VALUE_DECIMALS = 6;
const MICROS_PER_UNIT = 1_000_000n;

export type MetricType = 'unique' | 'count' | 'value';

/**
 * The number in micro-units, exactly as written in its shortest decimal form (JSON's 0.1 is
 * 100 000); null when it is not finite, above MAX_VALUE in size or has more than six decimals.
 */
export function toMicros(value: number): bigint | null {
  if (!Number.isFinite(value) || Math.abs(value) > MAX_VALUE) return null;
  const written = Math.abs(value).toString();
  // Only sizes below 10⁻⁶ print with an exponent here: more than six decimals.
  if (written.includes('e')) return null;
  const [whole, fraction = ''] = written.split('.');
  if (fraction.length > VALUE_DECIMALS) return null;
  const micros = BigInt(whole!) * MICROS_PER_UNIT + BigInt(fraction.padEnd(VALUE_DECIMALS, '0'));
  return value < 0 ? -micros : micros;
}

/** Micro-units back to a number of units (rounded to the nearest double). */
export function fromMicros(micros: bigint): number {
  return Number(micros) / 1e6;
}

/** Σy² is kept in micro-units squared. */
export function fromSquaredMicros(micros: bigint): number {
  return Number(micros) / 1e12;
}

/**
 * y, a participant's contribution to the metric of one event in one experiment, in micro-units:
 * its number of events (unique and count events) or the sum of the values they carried (value
 * events), at most the event's cap when it has one (winsorisation from above: a cap bounds what
 * one participant can weigh; negative values, e.g. refunds, are kept).
 */
export function metricValue(event: { type: MetricType; cap: number | null }, total: { count: number; value: bigint }): bigint {
  const raw = event.type === 'value' ? total.value : BigInt(total.count) * MICROS_PER_UNIT;
  if (event.cap === null) return raw;
  const cap = toMicros(event.cap);
  return cap !== null && raw > cap ? cap : raw;
}

/** How Σy and Σy² change when a participant's y goes from `before` to `after`: y → y + Δ adds Δ and 2yΔ + Δ². */
export function sumChange(before: bigint, after: bigint): { y: bigint; y2: bigint } {
  return { y: after - before, y2: after * after - before * before };
}
