// The team's flags: a page of them with an on/off toggle and the value each serves, and a new one.
import { useState } from 'preact/hooks';
import type { Problem, Schemas, Session } from './session';
import { asProblem, Field, Pager, ProblemBanner, useAnswer } from './ui';

export function FlagsPage({ session }: { session: Session }) {
  const [page, setPage] = useState(1);
  const list = useAnswer(() => session.api.GET('/api/teams/{team}/features', { params: { path: { team: session.team.id }, query: { page, per_page: 20 } } }), [session.team.id, page]);
  return (
    <>
      <h1>Flags</h1>
      <CreateFlag session={session} />
      <ProblemBanner problem={list.problem} />
      {list.data?.data.length === 0 && <p class="hint">No flags yet.</p>}
      {list.data && list.data.data.length > 0 && (
        <div class="table">
          <table class="list">
            <thead>
              <tr>
                <th scope="col">flag</th>
                <th scope="col">on</th>
                <th scope="col">value</th>
                <th scope="col">rules</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((flag) => (
                <FlagRow key={flag.key} session={session} flag={flag} onChange={list.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager meta={list.data.meta} go={setPage} />}
    </>
  );
}

function FlagRow({ session, flag, onChange }: { session: Session; flag: Schemas['Feature']; onChange: () => void }) {
  const [problem, setProblem] = useState<Problem>();
  return (
    <tr data-flag={flag.key}>
      <td data-label="flag">
        <a href={`#/flags/${encodeURIComponent(flag.key)}`}>{flag.key}</a>
        {flag.description && <span class="hint block">{flag.description}</span>}
      </td>
      <td data-label="on">
        <label class="switch">
          <input
            type="checkbox"
            role="switch"
            checked={flag.enabled}
            aria-label={`${flag.key} on`}
            onChange={async (event) => {
              const changed = await session.api.PUT('/api/teams/{team}/features/{feature}', {
                params: { path: { team: session.team.id, feature: flag.key } },
                body: { enabled: event.currentTarget.checked },
              });
              if (changed.error) return setProblem(asProblem(changed.error, changed.response));
              setProblem(undefined);
              onChange();
            }}
          />
          <span>{flag.enabled ? 'on' : 'off'}</span>
        </label>
        {problem && <span class="field-problem">{problem.detail}</span>}
      </td>
      <td data-label="value">
        <code>{flag.value ?? 'null'}</code>
      </td>
      <td data-label="rules">{flag.rules.length}</td>
    </tr>
  );
}

function CreateFlag({ session }: { session: Session }) {
  const [problem, setProblem] = useState<Problem>();
  return (
    <details class="create">
      <summary>New flag</summary>
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          const data = new FormData(event.currentTarget as HTMLFormElement);
          const description = String(data.get('description'));
          const created = await session.api.POST('/api/teams/{team}/features', {
            params: { path: { team: session.team.id } },
            body: { key: String(data.get('key')), value: String(data.get('value')), enabled: data.get('enabled') === 'on', ...(description && { description }) },
          });
          if (created.error || !created.data) return setProblem(asProblem(created.error, created.response));
          location.hash = `#/flags/${encodeURIComponent(created.data.data.key)}`;
        }}
      >
        <ProblemBanner problem={problem} fields={['/body/key', '/body/value', '/body/description']} />
        <Field label="Key" path="/body/key" problem={problem}>
          {(props) => <input {...props} required autocomplete="off" />}
        </Field>
        <Field label="Value" path="/body/value" problem={problem} hint="What SDKs hand the app when no rule applies: text, a colour, JSON.">
          {(props) => <input {...props} defaultValue="on" />}
        </Field>
        <Field label="Description" path="/body/description" problem={problem}>
          {(props) => <input {...props} />}
        </Field>
        <label class="check">
          <input type="checkbox" name="enabled" /> On
        </label>
        <button type="submit" class="primary">
          Create flag
        </button>
      </form>
    </details>
  );
}
