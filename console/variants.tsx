// An experiment's variants: their shares, the control, and — while it is a draft — adding,
// changing and removing them.
import { useState } from 'preact/hooks';
import type { Problem, Schemas, Session } from './session';
import { asProblem, Field, ProblemBanner, problemAt } from './ui';

export function Variants({ session, experiment, onChange }: { session: Session; experiment: Schemas['Experiment']; onChange: () => void }) {
  const variants = experiment.variants ?? [];
  const draft = experiment.status === 'draft';
  const [problem, setProblem] = useState<Problem>();
  const path = { team: session.team.id, experiment: experiment.key };
  const total = variants.reduce((sum, v) => sum + v.traffic, 0);
  return (
    <section aria-labelledby="variants-title">
      <h2 id="variants-title">Variants</h2>
      {variants.length === 0 && <p class="hint">No variants yet: a start needs at least two, one of them the control.</p>}
      {variants.length > 0 && (
        <div class="table">
          <table class="list">
            <thead>
              <tr>
                <th scope="col">variant</th>
                <th scope="col">share</th>
                <th scope="col">control</th>
                {draft && <th scope="col">change</th>}
              </tr>
            </thead>
            <tbody>
              {variants.map((variant) => (
                <tr key={variant.key} data-variant={variant.key}>
                  <td data-label="variant">
                    {variant.key}
                    {variant.description && <span class="hint block">{variant.description}</span>}
                  </td>
                  <td data-label="share">
                    {variant.traffic}
                    {'\u00a0'}%{variant.traffic_auto ? ' (equal share)' : ''}
                  </td>
                  <td data-label="control">{variant.control ? 'yes' : 'no'}</td>
                  {draft && (
                    <td data-label="change">
                      <ShareForm session={session} experiment={experiment.key} variant={variant} onChange={onChange} />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {variants.length > 0 && total !== 100 && <p class="hint">The shares add up to {total} %: a start needs 100 %.</p>}
      {draft && (
        <form
          class="add-variant"
          onSubmit={async (event) => {
            event.preventDefault();
            const form = event.currentTarget as HTMLFormElement;
            const data = new FormData(form);
            const traffic = String(data.get('traffic'));
            const description = String(data.get('description'));
            const created = await session.api.POST('/api/teams/{team}/experiments/{experiment}/variants', {
              params: { path },
              body: { key: String(data.get('key')), control: data.get('control') === 'on', ...(traffic !== '' && { traffic: Number(traffic) }), ...(description && { description }) },
            });
            if (created.error) return setProblem(asProblem(created.error, created.response));
            setProblem(undefined);
            form.reset();
            onChange();
          }}
        >
          <h3>Add a variant</h3>
          <ProblemBanner problem={problem} fields={['/body/key', '/body/traffic', '/body/description']} />
          <Field label="Variant key" path="/body/key" problem={problem}>
            {(props) => <input {...props} required autocomplete="off" />}
          </Field>
          <Field label="Share in percent (empty: an equal share of what is left)" path="/body/traffic" problem={problem}>
            {(props) => <input {...props} type="number" inputMode="numeric" class="short" />}
          </Field>
          <Field label="Description" path="/body/description" problem={problem}>
            {(props) => <input {...props} />}
          </Field>
          <label class="check">
            <input type="checkbox" name="control" defaultChecked={variants.length === 0} /> The control (what participants get today)
          </label>
          <button type="submit">Add variant</button>
        </form>
      )}
      {!draft && <ProblemBanner problem={problem} />}
    </section>
  );
}

/** A draft variant's share, set or removed in its row; the problem shows in the row too. */
function ShareForm({ session, experiment, variant, onChange }: { session: Session; experiment: string; variant: Schemas['Variant']; onChange: () => void }) {
  const [problem, setProblem] = useState<Problem>();
  const path = { team: session.team.id, experiment, variant: variant.key };
  const id = `share-${variant.key}`;
  const message = problem && (problemAt(problem, '/body/traffic') ?? problem.detail);
  return (
    <form
      class="inline"
      onSubmit={async (event) => {
        event.preventDefault();
        const text = String(new FormData(event.currentTarget as HTMLFormElement).get('traffic'));
        const changed = await session.api.PUT('/api/teams/{team}/experiments/{experiment}/variants/{variant}', { params: { path }, body: { traffic: text === '' ? null : Number(text) } });
        if (changed.error) return setProblem(asProblem(changed.error, changed.response));
        setProblem(undefined);
        onChange();
      }}
    >
      <label>
        <span class="visually-hidden">Share of {variant.key} in percent</span>
        <input name="traffic" type="number" inputMode="numeric" class="short" defaultValue={variant.traffic_auto ? '' : String(variant.traffic)} placeholder="equal" aria-invalid={message !== undefined} aria-describedby={message ? `${id}-problem` : undefined} />
      </label>
      <button type="submit">Set share</button>
      <button
        type="button"
        onClick={async () => {
          const removed = await session.api.DELETE('/api/teams/{team}/experiments/{experiment}/variants/{variant}', { params: { path } });
          if (removed.error) return setProblem(asProblem(removed.error, removed.response));
          onChange();
        }}
      >
        Remove
      </button>
      {message && (
        <p class="field-problem" id={`${id}-problem`}>
          {message}
        </p>
      )}
    </form>
  );
}
