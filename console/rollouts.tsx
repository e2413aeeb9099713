// A flag's safe rollouts (GET …/features/{feature}/rollouts), newest first: each one's state, step
// and share, exposures per arm, each guardrail's reading against the current arm, the hold and the
// rollback if any, the history of its steps, and the manual actions its state allows.
import { useState } from 'preact/hooks';
import { NBSP, number, percent, points, pValue, signed } from './results/format';
import { Table, type Column } from './results/table';
import type { Problem, Schemas, Session } from './session';
import { asProblem, ConfirmButton, ProblemBanner, Terms, useAnswer, when } from './ui';

type Rollout = Schemas['Rollout'];
type Reading = Schemas['RolloutReading'];
type Action = 'pause' | 'resume' | 'roll-back' | 'release';

const STATES: Record<Schemas['RolloutState'], string> = { running: 'running', paused: 'paused', rolled_back: 'rolled back', released: 'released' };

export function Rollouts({ session, flagKey, onReleased }: { session: Session; flagKey: string; onReleased: () => void }) {
  const path = { team: session.team.id, feature: flagKey };
  const answer = useAnswer(() => session.api.GET('/api/teams/{team}/features/{feature}/rollouts', { params: { path } }), [session.team.id, flagKey]);
  const [problem, setProblem] = useState<Problem>();
  const act = async (rollout: Rollout, action: Action) => {
    const params = { params: { path: { ...path, rollout: String(rollout.number) } } };
    const done =
      action === 'pause'
        ? await session.api.POST('/api/teams/{team}/features/{feature}/rollouts/{rollout}/pause', params)
        : action === 'resume'
          ? await session.api.POST('/api/teams/{team}/features/{feature}/rollouts/{rollout}/resume', params)
          : action === 'roll-back'
            ? await session.api.POST('/api/teams/{team}/features/{feature}/rollouts/{rollout}/roll-back', params)
            : await session.api.POST('/api/teams/{team}/features/{feature}/rollouts/{rollout}/release', params);
    setProblem(done.error ? asProblem(done.error, done.response) : undefined);
    answer.reload();
    // Releasing set the flag's value.
    if (action === 'release' && !done.error) onReleased();
  };
  const rollouts = [...(answer.data?.data ?? [])].reverse();
  return (
    <section aria-labelledby="rollouts-title" class="rollouts" data-drawn={answer.data ? rollouts.length : undefined}>
      <h2 id="rollouts-title">Safe rollouts</h2>
      <ProblemBanner problem={problem ?? answer.problem} />
      {answer.data && rollouts.length === 0 && <p class="hint">None yet: a safe rollout ramps a new value up while its guardrails hold, and rolls it back when one is harmed (POST …/rollouts).</p>}
      {rollouts.map((rollout) => (
        <RolloutView key={rollout.number} rollout={rollout} onAction={(action) => act(rollout, action)} />
      ))}
    </section>
  );
}

function RolloutView({ rollout, onAction }: { rollout: Rollout; onAction: (action: Action) => void }) {
  const open = rollout.state === 'running' || rollout.state === 'paused';
  const items: Array<[string, string]> = [
    ['state', STATES[rollout.state]],
    ['step', `${rollout.step + 1} of ${rollout.steps.length}`],
    ['share', `${rollout.share}${NBSP}% in each arm`],
    ['exposed, new value', rollout.exposures.new.toLocaleString('en')],
    ['exposed, current value', rollout.exposures.current.toLocaleString('en')],
    ['level', `α = ${rollout.significance}`],
  ];
  return (
    <article class="rollout" data-rollout={rollout.number} data-state={rollout.state}>
      <h3>
        Rollout {rollout.number}: <code>{rollout.value}</code> <span class="role">({STATES[rollout.state]})</span>
      </h3>
      <Terms items={items} />
      {rollout.hold && (
        <p class="warning" role="alert" data-hold>
          Held since {when(rollout.hold.since)} UTC: the arms' exposures fail the sample-ratio check (p = {pValue(rollout.hold.sample_ratio_p_value)}), so the comparison cannot be trusted: the rollout neither advances nor rolls back until it is found.
        </p>
      )}
      {rollout.rollback && <RollbackLine rollout={rollout} />}
      {rollout.readings.length === 0 ? <p class="hint">No guardrails: nothing can roll it back but a person.</p> : <ReadingsTable rollout={rollout} />}
      <details class="steps">
        <summary>Steps ({rollout.history.length} of {rollout.steps.length} reached)</summary>
        <ol>
          {rollout.history.map((entry) => (
            <li key={entry.step} data-step={entry.step}>
              {entry.percentage}
              {NBSP}% from {when(entry.at)} UTC
            </li>
          ))}
        </ol>
        <p class="hint">
          The ramp: {rollout.steps.map((step) => `${step.percentage}${NBSP}%`).join(' → ')}; each step held at least {rollout.steps[0]!.hold_seconds / 60} minutes with {rollout.steps[0]!.minimum_exposures.toLocaleString('en')} new exposures in each arm (first
          step).
        </p>
      </details>
      {open && (
        <div class="actions">
          {rollout.state === 'running' ? (
            <button type="button" onClick={() => onAction('pause')}>
              Pause rollout {rollout.number}
            </button>
          ) : (
            <button type="button" onClick={() => onAction('resume')}>
              Resume rollout {rollout.number}
            </button>
          )}
          <ConfirmButton label={`Roll back rollout ${rollout.number}`} title={`Roll back rollout ${rollout.number}?`} danger onConfirm={() => onAction('roll-back')}>
            <p>Every participant gets the flag's current value again at the next config. This is final.</p>
          </ConfirmButton>
          <ConfirmButton label={`Release rollout ${rollout.number}`} title={`Release rollout ${rollout.number}?`} onConfirm={() => onAction('release')}>
            <p>The new value becomes the flag's value for everyone its rules do not decide, and monitoring stops.</p>
          </ConfirmButton>
        </div>
      )}
    </article>
  );
}

function RollbackLine({ rollout }: { rollout: Rollout }) {
  const rollback = rollout.rollback!;
  if (rollback.reason === 'manual') return <p class="warning" data-rollback="manual">Rolled back by hand at {when(rollback.at)} UTC.</p>;
  const metric = rollout.readings.find((reading) => reading.event === rollback.event)?.metric ?? 'rate';
  const write = metric === 'mean' ? (x: number) => signed(x) : (x: number) => points(x);
  return (
    <p class="warning" data-rollback="guardrail">
      Rolled back at {when(rollback.at)} UTC: {rollback.event} was harmed, new − current {rollback.effect === null ? '—' : write(rollback.effect)} (always-valid interval {interval(rollback.interval, write)}).
    </p>
  );
}

const interval = (bounds: number[] | null, write: (value: number) => string) => (bounds ? `${write(bounds[0]!)} … ${write(bounds[1]!)}` : '—');

function ReadingsTable({ rollout }: { rollout: Rollout }) {
  const level = percent(1 - rollout.significance, 0);
  const columns: Column<Reading>[] = [
    { head: 'guardrail', cell: (r) => r.event },
    { head: 'new value', cell: (r) => mean(r, r.new.mean) },
    { head: 'current value', cell: (r) => mean(r, r.current.mean) },
    { head: 'new − current', cell: (r) => (r.metric === 'mean' ? signed(r.difference) : points(r.difference)) },
    { head: `always-valid ${level}`, cell: (r) => interval(r.interval, r.metric === 'mean' ? (x) => signed(x) : (x) => points(Math.max(-1, Math.min(1, x)))) },
    { head: 'p toward harm (Holm)', cell: (r) => pValue(r.adjusted_p_value) },
    { head: 'verdict', cell: (r) => (r.harmed ? 'harmed' : 'not harmed') },
  ];
  return <Table columns={columns} rows={rollout.readings} rowData={(r) => ({ 'data-guardrail': r.event, 'data-harmed': String(r.harmed) })} className="readings" />;
}

/** An arm's mean on the guardrail's metric: a rate as a percentage, a mean per participant as a number. */
const mean = (reading: Reading, value: number | null) => (reading.metric === 'mean' ? number(value) : percent(value, 2));
