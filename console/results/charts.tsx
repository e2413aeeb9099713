// The results' charts as SVG, drawn at the width they are shown at (so their text keeps its size
// on a phone), with axes scaled to the data they show.
import { useEffect, useRef, useState } from 'preact/hooks';
import { decimalsFor, niceTicks, NBSP, points, signed } from './format';

/** About how wide a label of the charts' 11 px font is. */
const textWidth = (text: string): number => text.length * 6.4;
const scale = (d0: number, d1: number, r0: number, r1: number) => (value: number) => r0 + ((value - d0) / (d1 - d0 || 1)) * (r1 - r0);

/** The width of the element `ref` is put on, followed as it changes. */
export function useWidth(): [(node: HTMLElement | null) => void, number] {
  const [width, setWidth] = useState(0);
  const observer = useRef<ResizeObserver>();
  useEffect(() => () => observer.current?.disconnect(), []);
  const ref = (node: HTMLElement | null) => {
    observer.current?.disconnect();
    if (!node) return;
    observer.current = new ResizeObserver(([entry]) => setWidth(Math.floor(entry!.contentRect.width)));
    observer.current.observe(node);
  };
  return [ref, Math.max(260, Math.min(760, width || 600))];
}

/** How a chart writes a difference: of rates in percentage points (within ±100 pp), of means as they are. */
export interface Unit {
  label: (value: number, digits: number) => string;
  decimals: (step: number) => number;
  clamp: (value: number) => number;
}
export const RATES: Unit = { label: (v, d) => points(v, d), decimals: (step) => decimalsFor(step), clamp: (v) => Math.max(-1, Math.min(1, v)) };
export const MEANS: Unit = { label: (v, d) => signed(v, d), decimals: (step) => decimalsFor(step, 1), clamp: (v) => v };

const tickLabel = (unit: Unit, tick: number, step: number) => (tick === 0 ? (unit === RATES ? `0${NBSP}pp` : '0') : unit.label(tick, unit.decimals(step)));

export interface DifferenceRow {
  variant: string;
  difference: number | null;
  interval: { lower: number; upper: number } | null;
}

/** Each variant's difference from the control with its always-valid interval, around a zero line. */
export function DifferenceChart({ rows, unit, width, label }: { rows: DifferenceRow[]; unit: Unit; width: number; label: string }) {
  const drawn = rows.filter((row) => row.interval);
  if (drawn.length === 0) return null;
  const values = drawn.flatMap((row) => [row.interval!.lower, row.interval!.upper, row.difference ?? 0]).map(unit.clamp);
  const { ticks, step } = niceTicks(Math.min(0, ...values), Math.max(0, ...values), Math.max(2, Math.floor(width / 110)));
  const labels = ticks.map((tick) => tickLabel(unit, tick, step));
  const nameWidth = Math.min(Math.max(...rows.map((row) => textWidth(row.variant))), width * 0.3);
  const left = nameWidth + 16 + textWidth(labels[0]!) / 2;
  const right = width - textWidth(labels.at(-1)!) / 2 - 4;
  const x = scale(ticks[0]!, ticks.at(-1)!, left, right);
  const rowHeight = 28;
  const height = 34 + rowHeight * rows.length;
  const bottom = height - 22;
  return (
    <svg class="forest" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label}>
      <line class="axis" x1={left} x2={right} y1={bottom} y2={bottom} />
      {ticks.map((tick, i) => (
        <text key={tick} class="muted" x={x(tick)} y={height - 6} text-anchor="middle">
          {labels[i]}
        </text>
      ))}
      <line class="zero" x1={x(0)} x2={x(0)} y1={5} y2={bottom} />
      {rows.map((row, i) => {
        const y = 15 + i * rowHeight;
        return (
          <g key={row.variant} class="row" data-variant={row.variant}>
            <text x={4} y={y + 4}>
              {row.variant.length * 6.4 > nameWidth ? `${row.variant.slice(0, Math.max(1, Math.floor(nameWidth / 6.4) - 1))}…` : row.variant}
              <title>{row.variant}</title>
            </text>
            {row.interval && <line class="interval" x1={x(unit.clamp(row.interval.lower))} x2={x(unit.clamp(row.interval.upper))} y1={y} y2={y} data-lower={row.interval.lower} data-upper={row.interval.upper} />}
            {row.difference !== null && <circle class="estimate" cx={x(unit.clamp(row.difference))} cy={y} r={5} data-difference={row.difference} />}
          </g>
        );
      })}
    </svg>
  );
}

export interface SequencePoint {
  day: string;
  difference: number | null;
  interval: { lower: number; upper: number } | null;
  verdict: string | null;
}

/** The cumulative difference day by day inside its always-valid sequence. */
export function SequenceChart({ variant, series, unit, width }: { variant: string; series: SequencePoint[]; unit: Unit; width: number }) {
  const height = 200;
  const [top, bottom] = [10, height - 30];
  const drawn = series.filter((point) => point.interval && point.difference !== null);
  const values = drawn.flatMap((point) => [point.interval!.lower, point.interval!.upper]).map(unit.clamp);
  const { ticks, step } = niceTicks(Math.min(0, ...values), Math.max(0, ...values), 4);
  const labels = ticks.map((tick) => tickLabel(unit, tick, step));
  const left = Math.max(...labels.map(textWidth)) + 10;
  const right = width - 12;
  const single = series.length === 1;
  const x = single ? () => (left + right) / 2 : scale(0, series.length - 1, left, right);
  const y = scale(ticks[0]!, ticks.at(-1)!, bottom, top);
  const index = new Map(series.map((point, i) => [point.day, i]));
  const at = (point: SequencePoint) => x(index.get(point.day)!);
  const upper = (point: SequencePoint) => y(unit.clamp(point.interval!.upper));
  const lower = (point: SequencePoint) => y(unit.clamp(point.interval!.lower));
  const half = Math.min(24, (right - left) / 14);
  return (
    <svg class="sequence" data-variant={variant} width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`Difference of ${variant} over time`}>
      <line class="axis" x1={left} x2={left} y1={top} y2={bottom} />
      {ticks.map((tick, i) => (
        <g key={tick}>
          {tick !== 0 && <line class="grid" x1={left} x2={right} y1={y(tick)} y2={y(tick)} />}
          <text class="muted" x={left - 6} y={y(tick) + 4} text-anchor="end">
            {labels[i]}
          </text>
        </g>
      ))}
      <line class="zero" x1={left} x2={right} y1={y(0)} y2={y(0)} />
      {single ? (
        <text class="muted" x={x(0)} y={height - 8} text-anchor="middle">
          {series[0]!.day}
        </text>
      ) : (
        <>
          <text class="muted" x={left} y={height - 8}>
            {series[0]!.day}
          </text>
          <text class="muted" x={right} y={height - 8} text-anchor="end">
            {series.at(-1)!.day}
          </text>
        </>
      )}
      {drawn.length === 1 && <rect class="sequence-band" x={at(drawn[0]!) - half} width={2 * half} y={upper(drawn[0]!)} height={Math.max(1, lower(drawn[0]!) - upper(drawn[0]!))} />}
      {drawn.length > 1 && (
        <>
          <polygon class="sequence-band" points={[...drawn.map((p) => `${at(p)},${upper(p)}`), ...drawn.map((p) => `${at(p)},${lower(p)}`).reverse()].join(' ')} />
          <polyline class="difference-line" points={drawn.map((p) => `${at(p)},${y(unit.clamp(p.difference!))}`).join(' ')} />
        </>
      )}
      {drawn.map((p) => (
        <circle key={p.day} class="point" cx={at(p)} cy={y(unit.clamp(p.difference!))} r={3} data-day={p.day} data-difference={p.difference} data-lower={p.interval!.lower} data-upper={p.interval!.upper} data-corrected-verdict={p.verdict ?? ''} />
      ))}
    </svg>
  );
}
