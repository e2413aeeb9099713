// What every page of the console shares: fields that show the contract's problems where they
// belong, a problem banner, a pager, a confirmation, terms and their values, and loading a request's answer.
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import type { Problem } from './session';

/** The message of a problem for one field (`/body/key`, `/query/page`), if it names it. */
export function problemAt(problem: Problem | undefined, path: string): string | undefined {
  const found = problem?.errors?.filter((error) => error.path === path || error.path.startsWith(`${path}/`));
  return found && found.length > 0 ? found.map((error) => error.message).join('; ') : undefined;
}

/** A problem's fields that none of the form's fields shows: said in its banner. */
function unshown(problem: Problem, shown: readonly string[]): string[] {
  return (problem.errors ?? []).filter((error) => !shown.some((path) => error.path === path || error.path.startsWith(`${path}/`))).map((error) => `${error.path}: ${error.message}`);
}

/** A problem as a banner: its detail, and whatever of it no field of the form shows. */
export function ProblemBanner({ problem, fields = [] }: { problem?: Problem; fields?: readonly string[] }) {
  if (!problem) return null;
  const rest = unshown(problem, fields);
  return (
    <div class="problem" role="alert">
      <strong>{problem.title}</strong> {problem.detail}
      {rest.length > 0 && (
        <ul>
          {rest.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

interface FieldProps {
  label: string;
  /** The JSON pointer the contract's problems name this field by (`/body/description`). */
  path: string;
  problem?: Problem;
  hint?: string;
  children: (props: { id: string; 'aria-invalid': boolean; 'aria-describedby'?: string; name: string }) => JSX.Element;
}

/** A labelled control with its hint, and the problem the contract names it in, beside it. */
export function Field({ label, path, problem, hint, children }: FieldProps) {
  const id = useId();
  const message = problemAt(problem, path);
  const described = [hint && `${id}-hint`, message && `${id}-problem`].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field" data-path={path}>
      <label for={id}>{label}</label>
      {children({ id, name: path.split('/').pop()!, 'aria-invalid': message !== undefined, 'aria-describedby': described })}
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {message && (
        <p class="field-problem" id={`${id}-problem`}>
          {message}
        </p>
      )}
    </div>
  );
}

/** Previous and next page of a list (`meta` of the contract's pages); no request asks for more than one page. */
export function Pager({ meta, go }: { meta: { current_page: number; last_page: number; total: number }; go: (page: number) => void }) {
  if (meta.last_page <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={meta.current_page <= 1} onClick={() => go(meta.current_page - 1)}>
        Previous
      </button>
      <span>
        Page {meta.current_page} of {meta.last_page} ({meta.total})
      </span>
      <button type="button" disabled={meta.current_page >= meta.last_page} onClick={() => go(meta.current_page + 1)}>
        Next
      </button>
    </nav>
  );
}

/** A button that asks first, in a dialog saying what will happen. */
export function ConfirmButton({ label, title, children, onConfirm, danger }: { label: string; title: string; children: ComponentChildren; onConfirm: () => void | Promise<void>; danger?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button type="button" class={danger ? 'danger' : undefined} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-label={title}>
        <h2>{title}</h2>
        {children}
        <div class="actions">
          <button type="button" autofocus onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            class={danger ? 'danger' : 'primary'}
            onClick={async () => {
              dialog.current?.close();
              await onConfirm();
            }}
          >
            {label}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** Figures as terms and their values, side by side (a summary line that wraps on a phone). */
export function Terms({ items }: { items: ReadonlyArray<readonly [string, string | number]> }) {
  return (
    <dl class="summary">
      {items.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

/** The answer of a request made when `deps` change: its data, or its problem; `reload` asks again. */
export function useAnswer<T>(request: () => Promise<Answer<T>>, deps: unknown[]): { data?: T; problem?: Problem; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; problem?: Problem; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    request().then(
      ({ data, error, response }) => current && setState(data !== undefined ? { data, loading: false } : { problem: asProblem(error, response), loading: false }),
      () => current && setState({ problem: asProblem(undefined), loading: false }),
    );
    return () => void (current = false);
  }, [...deps, round]);
  return { ...state, reload: () => setRound((n) => n + 1) };
}

export function asProblem(error: unknown, response?: Response): Problem {
  if (error && typeof error === 'object' && 'detail' in error) return error as Problem;
  const status = response?.status ?? 0;
  return { type: 'about:blank', title: 'Request failed', status, detail: status ? `The service answered ${status}.` : 'The service did not answer.' };
}

export const when = (timestamp: string | null | undefined): string => (timestamp ? timestamp.replace('T', ' ').slice(0, 16) : '—');

/** Text as JSON for an editor, and back: undefined when it does not parse (the field shows why). */
export function parseJson(text: string): { value?: unknown; error?: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error: `not JSON: ${(error as Error).message}` };
  }
}
