// An experiment's results (GET …/experiments/{experiment}/results) as a product manager reads
// them: the goal first, then the guardrails, then the rest; one verdict per variant and event,
// saying what it judges; the charts scaled to their data.
import { useState } from 'preact/hooks';
import type { Schemas, Session } from '../session';
import { ProblemBanner, Terms, useAnswer, when } from '../ui';
import { DifferenceChart, MEANS, RATES, SequenceChart, useWidth, type SequencePoint } from './charts';
import { RecentChanges } from './changes';
import { Table as VariantTable, type Column as TableColumn } from './table';
import { byRole, correctionText, duration, METRICS, NBSP, number, percent, points, pValue, signed, VERDICTS, variantName } from './format';

type Results = Schemas['ExperimentResults'];
type EventResults = Schemas['EventResults'];
type VariantResult = Schemas['VariantEventResult'];

export function ResultsView({ session, experiment }: { session: Session; experiment: string }) {
  const { api, team } = session;
  const [historyEvent, setHistoryEvent] = useState<string>();
  const events = useAnswer(() => api.GET('/api/teams/{team}/events', { params: { path: { team: team.id }, query: { per_page: 100 } } }), [team.id]);
  const keys = events.data?.data.map((event) => event.key) ?? [];
  const results = useAnswer(
    () =>
      api.GET('/api/teams/{team}/experiments/{experiment}/results', {
        params: { path: { team: team.id, experiment }, query: { ...(keys.length > 0 && { events: keys.slice(0, 20) }), ...(historyEvent && { history_event: historyEvent }) } },
      }),
    [team.id, experiment, keys.join(','), historyEvent],
  );
  const [measure, width] = useWidth();
  if (!events.data && !events.problem) return <p class="hint">Loading the results…</p>;
  const data = results.data?.data;
  return (
    <section class="results" ref={measure} aria-busy={results.loading} data-drawn={data ? `${data.experiment}:${data.history.event}` : undefined}>
      <ProblemBanner problem={results.problem ?? events.problem} />
      {data && <Summary results={data} />}
      {data?.srm_warning && (
        <p id="srm-warning" class="warning" role="alert">
          Sample-ratio mismatch: the participants are not split as the traffic says (χ² = {data.srm.chi_square?.toFixed(2)}, p = {pValue(data.srm.p_value)}). Assignment or data collection is broken; do not trust the verdicts until
          it is found.
        </p>
      )}
      {data && byRole(data.events).map((event) => <EventView key={event.event} event={event} width={width} />)}
      {data && <History results={data} eventKeys={keys} width={width} onEvent={setHistoryEvent} />}
      {data && <RecentChanges session={session} experiment={experiment} />}
      {data && (
        <p class="hint">
          Each verdict comes from an always-valid 95{NBSP}% confidence sequence (mixture SPRT), so looking every day does not inflate false positives; it needs {data.method.minimum_participants} participants in the variant and in the
          control. It reads better and worse by the event's direction and is corrected for the experiment's many comparisons: the goal's variants together (Holm), the secondary events together (Benjamini–Hochberg); a guardrail is
          tested one-sided, toward harm.
        </p>
      )}
    </section>
  );
}

function Summary({ results }: { results: Results }) {
  const items: Array<[string, string | number]> = [
    ['status', results.status],
    ['participants', results.participants],
    ['coverage', `${results.coverage}${NBSP}%`],
    ['goal', results.goal],
    ['started', when(results.runtime.started_at).slice(0, 10)],
    ['stopped', when(results.runtime.stopped_at).slice(0, 10)],
    ['running for', duration(results.runtime.days_running)],
  ];
  return <Terms items={items} />;
}

const ROLE_TEXT = { goal: 'goal', guardrail: 'guardrail', secondary: 'secondary event' } as const;

function EventView({ event, width }: { event: EventResults; width: number }) {
  const onMeans = event.metric === 'mean';
  const control = event.variants.find((v) => v.control);
  const judged = event.variants.filter((v) => v.decision);
  return (
    <article class="event" data-event={event.event} data-role={event.role}>
      <h3>
        {event.event} <span class="role">({ROLE_TEXT[event.role]}, {event.direction === 'decrease' ? 'lower' : 'higher'} is better)</span>
      </h3>
      {event.variants.length === 0 && <p class="hint">No variants yet.</p>}
      <ul class="verdict-lines">
        {judged.map((v) => (
          <li key={v.variant} data-variant={v.variant}>
            <span class="decision" data-verdict={v.decision!.verdict ?? 'collecting'}>
              {VERDICTS[v.decision!.verdict ?? 'collecting']}
            </span>{' '}
            {v.variant} against {control?.variant ?? 'the control'} on the {METRICS[v.decision!.metric]}: {onMeans ? signed(v.decision!.difference) : points(v.decision!.difference)} (p{NBSP}
            {pValue(v.decision!.adjusted_p_value)}, {correctionText(v.decision!.correction)})
            {v.statistics.regression_adjustment && (
              <>
                {' '}
                <abbr class="cuped" title="Adjusted on each participant's own behaviour before the experiment (CUPED)">
                  CUPED
                </abbr>
              </>
            )}
          </li>
        ))}
      </ul>
      <Adjustments event={event} />
      <DifferenceChart
        rows={judged.map((v) => ({ variant: v.variant, difference: v.decision!.difference, interval: v.decision!.confidence_sequence }))}
        unit={onMeans ? MEANS : RATES}
        width={width}
        label={`Difference from the control on ${event.event}`}
      />
      {event.variants.length > 0 && (onMeans ? <MeansTable event={event} /> : <RatesTable event={event} />)}
      <Planning event={event} />
    </article>
  );
}

/**
 * Where the comparison is adjusted on the participants' own past (CUPED), the main interval is the
 * adjusted one; beside it, the unadjusted one and how much of the variance the adjustment removed.
 */
function Adjustments({ event }: { event: EventResults }) {
  const write = event.metric === 'mean' ? (x: number) => signed(x) : (x: number) => points(x);
  const adjusted = event.variants.filter((v) => v.statistics.regression_adjustment);
  if (adjusted.length === 0) return null;
  return (
    <ul class="adjustments">
      {adjusted.map((v) => {
        const adjustment = v.statistics.regression_adjustment!;
        const unadjusted = event.metric === 'mean' ? (v.statistics.means?.difference_interval ?? null) : v.statistics.difference_interval;
        return (
          <li key={v.variant} data-variant={v.variant}>
            <abbr class="cuped" title="Controlled-experiment Using Pre-Experiment Data">
              CUPED
            </abbr>{' '}
            {v.variant}: adjusted on each participant's own last {adjustment.pre_exposure_days} days before it entered, the 95{NBSP}% interval is {interval(adjustment.difference_interval, write)}{' '}
            (unadjusted {interval(unadjusted, write)}), with {percent(Math.max(0, adjustment.variance_reduction), 0)} less variance.
          </li>
        );
      })}
    </ul>
  );
}

type Column = TableColumn<VariantResult>;

const Table = ({ columns, variants, className }: { columns: Column[]; variants: VariantResult[]; className?: string }) => (
  // A control has no difference from itself: its empty cells are left out of a phone's card.
  <VariantTable columns={columns} rows={variants} rowData={(v) => ({ 'data-variant': v.variant })} className={className} />
);

const interval = (sequence: { lower: number; upper: number } | null, write: (value: number) => string) => (sequence ? `${write(sequence.lower)} … ${write(sequence.upper)}` : '—');

function RatesTable({ event }: { event: EventResults }) {
  const controlConverted = event.variants.find((v) => v.control)?.statistics.unique_conversions ?? 0;
  const columns: Column[] = [
    { head: 'variant', cell: variantName },
    { head: 'participants', cell: (v) => String(v.participants) },
    { head: 'converted', cell: (v) => String(v.statistics.unique_conversions) },
    { head: 'rate', cell: (v) => percent(v.statistics.unique_conversion_rate, 2) },
    { head: 'difference', cell: (v) => (v.control ? '—' : points(v.decision?.difference ?? v.difference)) },
    { head: `always-valid 95${NBSP}%`, cell: (v) => (v.control ? '—' : interval(v.decision?.confidence_sequence ?? null, (x) => points(Math.max(-1, Math.min(1, x))))) },
    // Nothing converted in either arm: there is nothing to beat.
    { head: 'chance to beat', cell: (v) => (v.control || (v.statistics.unique_conversions === 0 && controlConverted === 0) ? '—' : percent(v.statistics.chance_to_beat_control, 1, true)) },
  ];
  return <Table columns={columns} variants={event.variants} />;
}

function MeansTable({ event }: { event: EventResults }) {
  const columns: Column[] = [
    { head: 'variant', cell: variantName },
    { head: 'participants', cell: (v) => String(v.participants) },
    { head: 'converted', cell: (v) => String(v.statistics.unique_conversions) },
    { head: 'mean per participant', cell: (v) => number(v.statistics.means?.mean) },
    { head: 'difference', cell: (v) => (v.control ? '—' : signed(v.decision?.difference)) },
    { head: `always-valid 95${NBSP}%`, cell: (v) => (v.control ? '—' : interval(v.decision?.confidence_sequence ?? null, (x) => signed(x))) },
    { head: 'relative', cell: (v) => (v.control || v.statistics.means?.relative_uplift == null ? '—' : percent(v.statistics.means.relative_uplift, 1)) },
    { head: 'chance to beat', cell: (v) => (v.control ? '—' : percent(v.statistics.means?.chance_to_beat_control ?? null, 1, true)) },
  ];
  return <Table columns={columns} variants={event.variants} className="means" />;
}

const DECIDED = new Set(['variant_better', 'variant_worse', 'guardrail_violated']);

/**
 * How many participants the experiment's minimum effect needs, for the variants still without a
 * decided verdict: a decided verdict stands whatever the plan said, so the line never sits beside one.
 */
function Planning({ event }: { event: EventResults }) {
  const open = event.variants.filter((v) => !v.control && v.decision && !DECIDED.has(v.decision.verdict ?? ''));
  const figures = open
    .map((v) => [v.variant, event.metric === 'mean' ? v.statistics.means?.participants_needed : v.statistics.participants_needed] as const)
    .filter((pair): pair is readonly [string, number] => typeof pair[1] === 'number');
  if (figures.length === 0) return null;
  const list = figures.map(([variant, needed]) => (needed === 0 ? `${variant}: enough already` : `${variant}: about ${needed.toLocaleString('en')} more in it and in the control`)).join('; ');
  return (
    <p class="hint needed">
      Still undecided — to detect the experiment's minimum effect with 80{NBSP}% power: {list}.
    </p>
  );
}

function History({ results, eventKeys, width, onEvent }: { results: Results; eventKeys: string[]; width: number; onEvent: (key: string) => void }) {
  const { history } = results;
  const keys = [...new Set([history.event, ...eventKeys])];
  const onMeans = history.metric === 'mean';
  const variants = history.days[0]?.variants.filter((v) => v.variant !== results.control).map((v) => v.variant) ?? [];
  return (
    <article class="history" data-event={history.event}>
      <h3>
        Over time: the difference from the control on{' '}
        <select id="history-event" aria-label="Event of the history" value={history.event} onChange={(e) => onEvent(e.currentTarget.value)}>
          {keys.map((key) => (
            <option key={key} value={key}>
              {key}
            </option>
          ))}
        </select>
      </h3>
      {history.days.length === 0 && <p class="hint">Nothing counted yet.</p>}
      {variants.map((variant) => {
        const series: SequencePoint[] = history.days.map((day) => {
          const v = day.variants.find((candidate) => candidate.variant === variant)!;
          const sequence = onMeans ? v.means_sequence : { difference: v.difference, confidence_sequence: v.confidence_sequence };
          return { day: day.day, difference: sequence?.difference ?? null, interval: sequence?.confidence_sequence ?? null, verdict: v.corrected_verdict };
        });
        const last = series.at(-1)?.verdict;
        return (
          <figure key={variant}>
            <figcaption class="hint">
              {variant} − {results.control}, {METRICS[history.metric]}
              {last ? `: ${VERDICTS[last as keyof typeof VERDICTS]}` : ''}
            </figcaption>
            <SequenceChart variant={variant} series={series} unit={onMeans ? MEANS : RATES} width={width} />
          </figure>
        );
      })}
    </article>
  );
}
