// Participants: look one up by key, see its attributes and enrolments, unenrol it from an
// experiment, delete it — each behind a confirmation — and a page of the latest.
import { useState } from 'preact/hooks';
import type { Problem, Session } from './session';
import { asProblem, ConfirmButton, Field, Pager, ProblemBanner, useAnswer, when } from './ui';

export function ParticipantsPage({ session, participantKey }: { session: Session; participantKey?: string }) {
  return (
    <>
      <h1>Participants</h1>
      <form
        class="row lookup"
        onSubmit={(event) => {
          event.preventDefault();
          const key = String(new FormData(event.currentTarget as HTMLFormElement).get('participant')).trim();
          location.hash = `#/participants/${encodeURIComponent(key)}`;
        }}
      >
        <Field label="Participant key" path="/path/participant">
          {(props) => <input {...props} name="participant" required defaultValue={participantKey ?? ''} autocomplete="off" />}
        </Field>
        <button type="submit" class="primary">
          Look up
        </button>
      </form>
      {participantKey ? <Participant key={participantKey} session={session} participantKey={participantKey} /> : <Latest session={session} />}
    </>
  );
}

function Latest({ session }: { session: Session }) {
  const [page, setPage] = useState(1);
  const list = useAnswer(() => session.api.GET('/api/teams/{team}/participants', { params: { path: { team: session.team.id }, query: { page, per_page: 20 } } }), [session.team.id, page]);
  return (
    <section aria-labelledby="latest-title">
      <h2 id="latest-title">All participants</h2>
      <ProblemBanner problem={list.problem} />
      {list.data?.data.length === 0 && <p class="hint">No participants yet: apps report them through the ingest operation.</p>}
      <ul class="plain">
        {list.data?.data.map((participant) => (
          <li key={participant.key}>
            <a href={`#/participants/${encodeURIComponent(participant.key)}`}>{participant.key}</a> <span class="hint">since {when(participant.created_at)}</span>
          </li>
        ))}
      </ul>
      {list.data && <Pager meta={list.data.meta} go={setPage} />}
    </section>
  );
}

function Participant({ session, participantKey }: { session: Session; participantKey: string }) {
  const path = { team: session.team.id, participant: participantKey };
  const participant = useAnswer(() => session.api.GET('/api/teams/{team}/participants/{participant}', { params: { path } }), [session.team.id, participantKey]);
  const enrolments = useAnswer(() => session.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path, query: { per_page: 100 } } }), [session.team.id, participantKey]);
  const [problem, setProblem] = useState<Problem>();
  const found = participant.data?.data;
  if (!found) return participant.problem ? <ProblemBanner problem={participant.problem} /> : <p class="hint">Loading…</p>;
  return (
    <section aria-labelledby="participant-title" data-participant={found.key}>
      <h2 id="participant-title">{found.key}</h2>
      <ProblemBanner problem={problem} />
      <dl class="summary">
        <div>
          <dt>first seen</dt>
          <dd>{when(found.created_at)}</dd>
        </div>
        <div>
          <dt>notes</dt>
          <dd>{found.notes || '—'}</dd>
        </div>
      </dl>
      <h3>Attributes</h3>
      <pre class="code" tabIndex={0}>{JSON.stringify(found.attributes, null, 2)}</pre>
      <h3>Enrolments</h3>
      {enrolments.data?.data.length === 0 && <p class="hint">In no experiment.</p>}
      <ul class="plain">
        {enrolments.data?.data.map((enrolment) => (
          <li key={enrolment.experiment} data-experiment={enrolment.experiment}>
            <a href={`#/experiments/${encodeURIComponent(enrolment.experiment)}`}>{enrolment.experiment}</a> ({enrolment.status}): <strong>{enrolment.variant}</strong>{' '}
            <span class="hint">since {when(enrolment.enrolled_at)}</span>{' '}
            <ConfirmButton
              label={`Unenrol from ${enrolment.experiment}`}
              title={`Unenrol ${found.key} from ${enrolment.experiment}?`}
              onConfirm={async () => {
                const removed = await session.api.DELETE('/api/teams/{team}/participants/{participant}/experiments/{experiment}', { params: { path: { ...path, experiment: enrolment.experiment } } });
                if (removed.error) return setProblem(asProblem(removed.error, removed.response));
                enrolments.reload();
              }}
            >
              <p>Its conversions leave that experiment's results, and it never enters that experiment again.</p>
            </ConfirmButton>
          </li>
        ))}
      </ul>
      <ConfirmButton
        label="Delete participant"
        title={`Delete ${found.key}?`}
        danger
        onConfirm={async () => {
          const removed = await session.api.DELETE('/api/teams/{team}/participants/{participant}', { params: { path } });
          if (removed.error) return setProblem(asProblem(removed.error, removed.response));
          location.hash = '#/participants';
        }}
      >
        <p>The participant, its attributes, enrolments and conversions are erased, and the results no longer count it. If its app reports it again, it comes back as new.</p>
      </ConfirmButton>
    </section>
  );
}
