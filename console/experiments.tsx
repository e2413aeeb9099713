// The experiments: a page of the list with each one's status, goal, participants and verdict,
// and the form that creates one.
import { useState } from 'preact/hooks';
import { VERDICTS } from './results/format';
import type { Problem, Schemas, Session } from './session';
import { asProblem, Field, Pager, ProblemBanner, useAnswer } from './ui';

const PER_PAGE = 20;

export function ExperimentsPage({ session }: { session: Session }) {
  const { api, team } = session;
  const [page, setPage] = useState(1);
  const list = useAnswer(() => api.GET('/api/teams/{team}/experiments', { params: { path: { team: team.id }, query: { page, per_page: PER_PAGE } } }), [team.id, page]);
  return (
    <>
      <h1>Experiments</h1>
      <CreateExperiment session={session} />
      <ProblemBanner problem={list.problem} />
      {list.data && list.data.data.length === 0 && <p class="hint">No experiments yet: create the first above.</p>}
      {list.data && list.data.data.length > 0 && (
        <div class="table">
          <table class="list" aria-busy={list.loading}>
            <thead>
              <tr>
                <th scope="col">experiment</th>
                <th scope="col">status</th>
                <th scope="col">goal</th>
                <th scope="col">participants</th>
                <th scope="col">verdict on the goal</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((experiment) => (
                <ExperimentRow key={experiment.key} session={session} experiment={experiment} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager meta={list.data.meta} go={setPage} />}
    </>
  );
}

/** A row; a started experiment's participants and verdict come from its results, asked for once the row is shown. */
function ExperimentRow({ session, experiment }: { session: Session; experiment: Schemas['Experiment'] }) {
  const started = experiment.status !== 'draft';
  const results = useAnswer(
    () =>
      started
        ? session.api.GET('/api/teams/{team}/experiments/{experiment}/results', {
            params: { path: { team: session.team.id, experiment: experiment.key }, query: { events: [experiment.event], history_days: 1 } },
          })
        : Promise.resolve({ data: undefined, error: undefined, response: new Response(null, { status: 204 }) }),
    [experiment.key],
  );
  const goal = results.data?.data.events.find((event) => event.goal);
  const verdicts = (goal?.variants ?? []).filter((variant) => variant.decision).map((variant) => `${variant.variant}: ${VERDICTS[variant.decision!.verdict ?? 'collecting']}`);
  return (
    <tr>
      <td data-label="experiment">
        <a href={`#/experiments/${encodeURIComponent(experiment.key)}`}>{experiment.key}</a>
        {experiment.description && <span class="hint block">{experiment.description}</span>}
      </td>
      <td data-label="status">
        <span class="status" data-status={experiment.status}>
          {experiment.status}
        </span>
      </td>
      <td data-label="goal">{experiment.event}</td>
      <td data-label="participants">{started ? (results.data?.data.participants ?? '…') : '—'}</td>
      <td data-label="verdict">{started ? (verdicts.join(', ') || (results.loading ? '…' : '—')) : 'not started'}</td>
    </tr>
  );
}

function CreateExperiment({ session }: { session: Session }) {
  const [problem, setProblem] = useState<Problem>();
  const events = useAnswer(() => session.api.GET('/api/teams/{team}/events', { params: { path: { team: session.team.id }, query: { per_page: 100 } } }), [session.team.id]);
  return (
    <details class="create">
      <summary>New experiment</summary>
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget as HTMLFormElement);
          const key = String(form.get('key'));
          const description = String(form.get('description'));
          const created = await session.api.POST('/api/teams/{team}/experiments', {
            params: { path: { team: session.team.id } },
            body: { key, event: String(form.get('event')), ...(description && { description }) },
          });
          if (created.error || !created.data) return setProblem(asProblem(created.error, created.response));
          location.hash = `#/experiments/${encodeURIComponent(created.data.data.key)}`;
        }}
      >
        <ProblemBanner problem={problem} fields={['/body/key', '/body/event', '/body/description']} />
        <Field label="Key" path="/body/key" problem={problem} hint="Letters and digits joined by single underscores, e.g. checkout_redesign.">
          {(props) => <input {...props} required autocomplete="off" />}
        </Field>
        <Field label="Goal event" path="/body/event" problem={problem} hint="The event the experiment is judged by (create it under Events first).">
          {(props) => (
            <select {...props} required>
              <option value="">Choose an event</option>
              {events.data?.data.map((item) => (
                <option key={item.key} value={item.key}>
                  {item.key}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Description" path="/body/description" problem={problem}>
          {(props) => <textarea {...props} rows={2} />}
        </Field>
        <button type="submit" class="primary">
          Create experiment
        </button>
      </form>
    </details>
  );
}
