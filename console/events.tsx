// The team's events: a page of them, each editable (description, type, direction, cap), and a new one.
import { useState } from 'preact/hooks';
import type { Problem, Schemas, Session } from './session';
import { asProblem, ConfirmButton, Field, Pager, ProblemBanner, useAnswer } from './ui';

type Event = Schemas['Event'];
const FIELDS = ['/body/key', '/body/description', '/body/type', '/body/direction', '/body/cap'];

export function EventsPage({ session }: { session: Session }) {
  const [page, setPage] = useState(1);
  const list = useAnswer(() => session.api.GET('/api/teams/{team}/events', { params: { path: { team: session.team.id }, query: { page, per_page: 20 } } }), [session.team.id, page]);
  return (
    <>
      <h1>Events</h1>
      <p class="hint">What participants do, as apps report it with the ingest key. Experiments are judged by them.</p>
      <details class="create">
        <summary>New event</summary>
        <EventForm session={session} onSaved={list.reload} />
      </details>
      <ProblemBanner problem={list.problem} />
      {list.data?.data.length === 0 && <p class="hint">No events yet.</p>}
      <ul class="cards">
        {list.data?.data.map((event) => (
          <li key={`${event.key}:${event.updated_at}`} data-event={event.key}>
            <h2>{event.key}</h2>
            <p>
              {event.type}, {event.direction === 'decrease' ? 'lower is better' : 'higher is better'}
              {event.cap !== null && `, capped at ${event.cap}`}
            </p>
            {event.description && <p class="hint">{event.description}</p>}
            <details>
              <summary>Edit {event.key}</summary>
              <EventForm session={session} event={event} onSaved={list.reload} />
            </details>
          </li>
        ))}
      </ul>
      {list.data && <Pager meta={list.data.meta} go={setPage} />}
    </>
  );
}

const notANumber = (path: string, text: string): Problem => ({ type: 'about:blank', title: 'Bad Request', status: 400, detail: 'A field is not a number.', errors: [{ path, message: `"${text}" is not a number: write one, or leave it empty for none` }] });

function EventForm({ session, event, onSaved }: { session: Session; event?: Event; onSaved: () => void }) {
  const [problem, setProblem] = useState<Problem>();
  const team = session.team.id;
  return (
    <form
      onSubmit={async (submitted) => {
        submitted.preventDefault();
        const form = submitted.currentTarget as HTMLFormElement;
        const data = new FormData(form);
        const cap = String(data.get('cap')).trim();
        if (cap !== '' && !Number.isFinite(Number(cap))) return setProblem(notANumber('/body/cap', cap));
        const body = {
          key: String(data.get('key')),
          description: String(data.get('description')),
          type: String(data.get('type')) as Event['type'],
          direction: String(data.get('direction')) as Event['direction'],
          cap: cap === '' ? null : Number(cap),
        };
        const saved = event
          ? await session.api.PUT('/api/teams/{team}/events/{event}', { params: { path: { team, event: event.key } }, body })
          : await session.api.POST('/api/teams/{team}/events', { params: { path: { team } }, body });
        if (saved.error) return setProblem(asProblem(saved.error, saved.response));
        setProblem(undefined);
        if (!event) form.reset();
        onSaved();
      }}
    >
      <ProblemBanner problem={problem} fields={FIELDS} />
      <Field label="Key" path="/body/key" problem={problem}>
        {(props) => <input {...props} required autocomplete="off" defaultValue={event?.key} />}
      </Field>
      <Field label="Description" path="/body/description" problem={problem}>
        {(props) => <input {...props} defaultValue={event?.description ?? ''} />}
      </Field>
      <div class="row">
        <Field label="Type" path="/body/type" problem={problem} hint="unique: whether a participant did it; count: how often; value: a sum (revenue).">
          {(props) => (
            <select {...props} defaultValue={event?.type ?? 'unique'}>
              <option value="unique">unique</option>
              <option value="count">count</option>
              <option value="value">value</option>
            </select>
          )}
        </Field>
        <Field label="Direction" path="/body/direction" problem={problem}>
          {(props) => (
            <select {...props} defaultValue={event?.direction ?? 'increase'}>
              <option value="increase">higher is better</option>
              <option value="decrease">lower is better</option>
            </select>
          )}
        </Field>
        <Field label="Cap" path="/body/cap" problem={problem} hint="The most one participant counts for; empty for none.">
          {(props) => <input {...props} type="text" inputMode="decimal" class="short" defaultValue={event?.cap === null || event?.cap === undefined ? '' : String(event.cap)} />}
        </Field>
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          {event ? 'Save event' : 'Create event'}
        </button>
        {event && (
          <ConfirmButton
            label="Delete"
            title={`Delete ${event.key}?`}
            danger
            onConfirm={async () => {
              const removed = await session.api.DELETE('/api/teams/{team}/events/{event}', { params: { path: { team, event: event.key } } });
              if (removed.error) return setProblem(asProblem(removed.error, removed.response));
              onSaved();
            }}
          >
            <p>The event and every conversion counted on it are deleted; an experiment whose goal it is must be changed first.</p>
          </ConfirmButton>
        )}
      </div>
    </form>
  );
}
