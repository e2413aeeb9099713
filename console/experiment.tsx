// One experiment: its settings, variants, targeting and coverage, start and stop behind a
// confirmation that says what happens, and its results.
import { useState } from 'preact/hooks';
import { ConditionEditor } from './conditions';
import { ResultsView } from './results/view';
import type { Problem, Schemas, Session } from './session';
import { asProblem, ConfirmButton, Field, ProblemBanner, useAnswer, when } from './ui';
import { Variants } from './variants';

type Experiment = Schemas['Experiment'];

export function ExperimentPage({ session, experimentKey }: { session: Session; experimentKey: string }) {
  const path = { team: session.team.id, experiment: experimentKey };
  const answer = useAnswer(() => session.api.GET('/api/teams/{team}/experiments/{experiment}', { params: { path, query: { include: ['variants'] } } }), [session.team.id, experimentKey]);
  const [problem, setProblem] = useState<Problem>();
  const experiment = answer.data?.data;
  if (!experiment) return answer.problem ? <ProblemBanner problem={answer.problem} /> : <p class="hint">Loading…</p>;

  const act = async (action: 'start' | 'stop') => {
    const url = action === 'start' ? '/api/teams/{team}/experiments/{experiment}/start' : '/api/teams/{team}/experiments/{experiment}/stop';
    const done = await session.api.POST(url, { params: { path } });
    setProblem(done.error ? asProblem(done.error, done.response) : undefined);
    answer.reload();
  };
  return (
    <>
      <p class="crumbs">
        <a href="#/experiments">Experiments</a> /
      </p>
      <h1>
        {experiment.key} <span class="status" data-status={experiment.status}>{experiment.status}</span>
      </h1>
      <ProblemBanner problem={problem} />
      <div class="actions">
        {experiment.status === 'draft' && (
          <ConfirmButton label="Start" title={`Start ${experiment.key}?`} onConfirm={() => act('start')}>
            <p>
              Participants start entering it: {experiment.coverage} % of those its targeting admits are assigned a variant by hash, and SDKs see it in the config at once. Its variants can no longer change. Stopping later is final.
            </p>
          </ConfirmButton>
        )}
        {experiment.status === 'running' && (
          <ConfirmButton label="Stop" title={`Stop ${experiment.key}?`} danger onConfirm={() => act('stop')}>
            <p>Nobody enters it any more and SDKs stop assigning it; its results stay readable. A stopped experiment cannot be started again: a new experiment runs it again.</p>
          </ConfirmButton>
        )}
        <ConfirmButton
          label="Delete"
          title={`Delete ${experiment.key}?`}
          danger
          onConfirm={async () => {
            const removed = await session.api.DELETE('/api/teams/{team}/experiments/{experiment}', { params: { path } });
            if (removed.error) return setProblem(asProblem(removed.error, removed.response));
            location.hash = '#/experiments';
          }}
        >
          <p>The experiment, its variants, its enrolments and its results are deleted for good.</p>
        </ConfirmButton>
      </div>
      <Settings session={session} experiment={experiment} onSaved={answer.reload} />
      <Variants session={session} experiment={experiment} onChange={answer.reload} />
      {experiment.status !== 'draft' && (
        <section aria-labelledby="results-title">
          <h2 id="results-title">Results</h2>
          <ResultsView session={session} experiment={experiment.key} />
        </section>
      )}
    </>
  );
}

/** Description, goal, guardrails, minimum effect, targeting, coverage and exclusion group: one PUT of what changed. */
function Settings({ session, experiment, onSaved }: { session: Session; experiment: Experiment; onSaved: () => void }) {
  const [problem, setProblem] = useState<Problem>();
  const [conditions, setConditions] = useState(experiment.conditions);
  const [saved, setSaved] = useState(false);
  const group = experiment.exclusion_group;
  return (
    <form
      class="settings"
      onSubmit={async (event) => {
        event.preventDefault();
        const form = new FormData(event.currentTarget as HTMLFormElement);
        const text = (name: string) => String(form.get(name) ?? '').trim();
        const minimum = text('minimum_effect');
        const groupKey = text('group_key');
        const changed = await session.api.PUT('/api/teams/{team}/experiments/{experiment}', {
          params: { path: { team: session.team.id, experiment: experiment.key } },
          body: {
            description: text('description'),
            event: text('event'),
            guardrails: text('guardrails') === '' ? [] : text('guardrails').split(/[\s,]+/),
            minimum_effect: minimum === '' ? null : Number(minimum) / 100,
            conditions,
            coverage: Number(text('coverage')),
            exclusion_group: groupKey === '' ? null : { key: groupKey, start: Number(text('group_start')), end: Number(text('group_end')) },
          },
        });
        setSaved(!changed.error);
        if (changed.error) return setProblem(asProblem(changed.error, changed.response));
        setProblem(undefined);
        onSaved();
      }}
    >
      <h2>Settings</h2>
      <ProblemBanner
        problem={problem}
        fields={['/body/description', '/body/event', '/body/guardrails', '/body/minimum_effect', '/body/conditions', '/body/coverage', '/body/exclusion_group']}
      />
      <Field label="Description" path="/body/description" problem={problem}>
        {(props) => <textarea {...props} rows={2} defaultValue={experiment.description ?? ''} />}
      </Field>
      <div class="row">
        <Field label="Goal event" path="/body/event" problem={problem}>
          {(props) => <input {...props} defaultValue={experiment.event} required />}
        </Field>
        <Field label="Guardrail events" path="/body/guardrails" problem={problem} hint="Event keys, separated by commas: events that must not get worse.">
          {(props) => <input {...props} defaultValue={experiment.guardrails.join(', ')} />}
        </Field>
        <Field label="Minimum effect (%)" path="/body/minimum_effect" problem={problem} hint="The smallest relative change worth detecting, e.g. 5.">
          {(props) => <input {...props} type="number" step="any" class="short" defaultValue={experiment.minimum_effect === null ? '' : String(Number((experiment.minimum_effect * 100).toPrecision(6)))} />}
        </Field>
      </div>
      <ConditionEditor value={conditions} onChange={setConditions} problem={problem} path="/body/conditions" />
      <div class="row">
        <Field label="Coverage (%)" path="/body/coverage" problem={problem} hint="The share of targeted participants who enter; raising it only adds participants.">
          {(props) => <input {...props} type="number" step="any" class="short" defaultValue={String(experiment.coverage)} />}
        </Field>
        <Field label="Exclusion group" path="/body/exclusion_group" problem={problem} hint="Experiments in one group never share a participant. Empty: none.">
          {(props) => <input {...props} name="group_key" defaultValue={group?.key ?? ''} />}
        </Field>
        <Field label="Range in the group: from (%)" path="/body/exclusion_group/start" problem={problem}>
          {(props) => <input {...props} name="group_start" type="number" step="any" class="short" defaultValue={String(group?.start ?? 0)} />}
        </Field>
        <Field label="to (%)" path="/body/exclusion_group/end" problem={problem}>
          {(props) => <input {...props} name="group_end" type="number" step="any" class="short" defaultValue={String(group?.end ?? 100)} />}
        </Field>
      </div>
      <CoverageHistory session={session} experiment={experiment} />
      <button type="submit" class="primary">
        Save settings
      </button>
      {saved && !problem && (
        <span class="hint" role="status">
          {' '}
          Saved.
        </span>
      )}
    </form>
  );
}

/** The coverage ramp so far, from the results (a draft has none). */
function CoverageHistory({ session, experiment }: { session: Session; experiment: Experiment }) {
  const results = useAnswer(
    () =>
      experiment.status === 'draft'
        ? Promise.resolve({ data: undefined, error: undefined, response: new Response(null, { status: 204 }) })
        : session.api.GET('/api/teams/{team}/experiments/{experiment}/results', { params: { path: { team: session.team.id, experiment: experiment.key }, query: { events: [experiment.event], history_days: 1 } } }),
    [experiment.key, experiment.coverage],
  );
  const changes = results.data?.data.coverage_changes ?? [];
  if (changes.length === 0) return null;
  return (
    <details class="ramp">
      <summary>Coverage changes ({changes.length})</summary>
      <ul>
        {changes.map((change) => (
          <li key={change.at}>
            {when(change.at)} UTC: {change.from} % → {change.to} %
          </li>
        ))}
      </ul>
    </details>
  );
}
