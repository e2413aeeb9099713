// One flag: on/off, its value, its ordered rules (force, rollout, experiment) with conditions and
// schedules, its safe rollouts, and "try a participant": attributes in, the decision and why out (POST …/evaluate,
// which enrols nobody).
import { useState } from 'preact/hooks';
import { ConditionEditor } from './conditions';
import { Rollouts } from './rollouts';
import type { Problem, Schemas, Session } from './session';
import { asProblem, ConfirmButton, Field, parseJson, problemAt, ProblemBanner, useAnswer } from './ui';

type Feature = Schemas['Feature'];
type Rule = Schemas['FeatureRule'];

export function FlagPage({ session, flagKey }: { session: Session; flagKey: string }) {
  const path = { team: session.team.id, feature: flagKey };
  const answer = useAnswer(() => session.api.GET('/api/teams/{team}/features/{feature}', { params: { path } }), [session.team.id, flagKey]);
  const flag = answer.data?.data;
  if (!flag) return answer.problem ? <ProblemBanner problem={answer.problem} /> : <p class="hint">Loading…</p>;
  return (
    <>
      <p class="crumbs">
        <a href="#/flags">Flags</a> /
      </p>
      <h1>{flag.key}</h1>
      <FlagForm session={session} flag={flag} onSaved={answer.reload} />
      <Rollouts session={session} flagKey={flag.key} onReleased={answer.reload} />
      <TryParticipant session={session} flag={flag.key} />
    </>
  );
}

const newRule = (type: Rule['type']): Rule =>
  type === 'force' ? { type, value: 'on' } : type === 'rollout' ? { type, percentage: 10, value: 'on' } : { type, experiment: '', variants: {} };

function FlagForm({ session, flag, onSaved }: { session: Session; flag: Feature; onSaved: () => void }) {
  const [rules, setRules] = useState<Rule[]>(flag.rules);
  const [problem, setProblem] = useState<Problem>();
  const [saved, setSaved] = useState(false);
  const path = { team: session.team.id, feature: flag.key };
  const move = (from: number, to: number) => {
    const next = [...rules];
    next.splice(to, 0, ...next.splice(from, 1));
    setRules(next);
  };
  const change = (i: number, rule: Rule) => setRules(rules.map((r, j) => (j === i ? rule : r)));
  return (
    <form
      onSubmit={async (event) => {
        event.preventDefault();
        const data = new FormData(event.currentTarget as HTMLFormElement);
        const changed = await session.api.PUT('/api/teams/{team}/features/{feature}', {
          params: { path },
          body: { enabled: data.get('enabled') === 'on', value: String(data.get('value')), description: String(data.get('description')), rules },
        });
        setSaved(!changed.error);
        if (changed.error) return setProblem(asProblem(changed.error, changed.response));
        setProblem(undefined);
        onSaved();
      }}
    >
      <ProblemBanner problem={problem} fields={['/body/value', '/body/description', '/body/rules']} />
      <label class="check">
        <input type="checkbox" name="enabled" role="switch" defaultChecked={flag.enabled} /> On (off: the flag serves null to everyone)
      </label>
      <Field label="Value" path="/body/value" problem={problem} hint="Served when on and no rule applies.">
        {/* Drawn anew when the stored value changes (a rollout's release sets it). */}
        {(props) => <input {...props} key={flag.value ?? ''} defaultValue={flag.value ?? ''} />}
      </Field>
      <Field label="Description" path="/body/description" problem={problem}>
        {(props) => <input {...props} defaultValue={flag.description ?? ''} />}
      </Field>
      <h2>Rules</h2>
      <p class="hint">The first rule that applies serves its value; order them with the arrows.</p>
      <ol class="rules">
        {rules.map((rule, i) => (
          <li key={`${i}:${rule.type}`} data-rule={i}>
            <fieldset>
              <legend>
                Rule {i + 1}: {rule.type}
              </legend>
              <div class="actions">
                <button type="button" disabled={i === 0} aria-label={`Move rule ${i + 1} up`} onClick={() => move(i, i - 1)}>
                  ↑
                </button>
                <button type="button" disabled={i === rules.length - 1} aria-label={`Move rule ${i + 1} down`} onClick={() => move(i, i + 1)}>
                  ↓
                </button>
                <button type="button" onClick={() => setRules(rules.filter((_, j) => j !== i))}>
                  Remove rule {i + 1}
                </button>
              </div>
              <RuleFields rule={rule} index={i} problem={problem} onChange={(next) => change(i, next)} />
            </fieldset>
          </li>
        ))}
      </ol>
      <div class="actions">
        {(['force', 'rollout', 'experiment'] as const).map((type) => (
          <button key={type} type="button" onClick={() => setRules([...rules, newRule(type)])}>
            Add a {type} rule
          </button>
        ))}
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Save flag
        </button>
        {saved && !problem && (
          <span class="hint" role="status">
            Saved.
          </span>
        )}
        <ConfirmButton
          label="Delete"
          title={`Delete ${flag.key}?`}
          danger
          onConfirm={async () => {
            const removed = await session.api.DELETE('/api/teams/{team}/features/{feature}', { params: { path } });
            if (removed.error) return setProblem(asProblem(removed.error, removed.response));
            location.hash = '#/flags';
          }}
        >
          <p>SDKs stop seeing it at their next config: the app gets no value for it.</p>
        </ConfirmButton>
      </div>
    </form>
  );
}

function RuleFields({ rule, index, problem, onChange }: { rule: Rule; index: number; problem?: Problem; onChange: (rule: Rule) => void }) {
  const at = `/body/rules/${index}`;
  const [variantsText, setVariantsText] = useState(rule.type === 'experiment' ? JSON.stringify(rule.variants) : '{}');
  const [variantsProblem, setVariantsProblem] = useState<string>();
  return (
    <>
      {rule.type !== 'experiment' && (
        <Field label="Value served" path={`${at}/value`} problem={problem}>
          {(props) => <input {...props} value={rule.value ?? ''} onInput={(e) => onChange({ ...rule, value: e.currentTarget.value })} />}
        </Field>
      )}
      {rule.type === 'rollout' && (
        <Field label="To this share of participants (%)" path={`${at}/percentage`} problem={problem}>
          {(props) => <input {...props} type="number" step="any" class="short" value={String(rule.percentage)} onInput={(e) => onChange({ ...rule, percentage: Number(e.currentTarget.value) })} />}
        </Field>
      )}
      {rule.type === 'experiment' && (
        <>
          <Field label="Experiment" path={`${at}/experiment`} problem={problem}>
            {(props) => <input {...props} value={rule.experiment} onInput={(e) => onChange({ ...rule, experiment: e.currentTarget.value })} />}
          </Field>
          <Field label="Value per variant (JSON)" path={`${at}/variants`} problem={variantsProblem ? { type: 'about:blank', title: '', status: 400, detail: '', errors: [{ path: `${at}/variants`, message: variantsProblem }] } : problem} hint='e.g. {"treatment": "green"}'>
            {(props) => (
              <input
                {...props}
                class="code"
                value={variantsText}
                onInput={(e) => {
                  setVariantsText(e.currentTarget.value);
                  const parsed = parseJson(e.currentTarget.value);
                  setVariantsProblem(parsed.error);
                  // Not sent while it does not parse, as the conditions' JSON
                  e.currentTarget.setCustomValidity(parsed.error ?? '');
                  if (parsed.value !== undefined) onChange({ ...rule, variants: parsed.value as Record<string, string> });
                }}
              />
            )}
          </Field>
        </>
      )}
      <ConditionEditor value={rule.conditions ?? {}} onChange={(conditions) => onChange({ ...rule, conditions })} problem={problem} path={`${at}/conditions`} />
      <div class="row">
        <Field label="From (UTC, optional)" path={`${at}/starts_at`} problem={problem} hint="e.g. 2026-12-01T09:00:00Z">
          {(props) => <input {...props} value={rule.starts_at ?? ''} onInput={(e) => onChange({ ...rule, starts_at: e.currentTarget.value || null })} />}
        </Field>
        <Field label="Until (UTC, optional)" path={`${at}/ends_at`} problem={problem}>
          {(props) => <input {...props} value={rule.ends_at ?? ''} onInput={(e) => onChange({ ...rule, ends_at: e.currentTarget.value || null })} />}
        </Field>
      </div>
      {problemAt(problem, at) && !['value', 'percentage', 'experiment', 'variants', 'conditions', 'starts_at', 'ends_at'].some((name) => problemAt(problem, `${at}/${name}`)) && <p class="field-problem">{problemAt(problem, at)}</p>}
    </>
  );
}

function TryParticipant({ session, flag }: { session: Session; flag: string }) {
  const [problem, setProblem] = useState<Problem>();
  const [answer, setAnswer] = useState<Schemas['Evaluation']>();
  return (
    <section aria-labelledby="try-title">
      <h2 id="try-title">Try a participant</h2>
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          const data = new FormData(event.currentTarget as HTMLFormElement);
          const attributes = parseJson(String(data.get('attributes')) || '{}');
          if (attributes.error) return setProblem({ type: 'about:blank', title: 'Bad Request', status: 400, detail: 'The attributes are not JSON.', errors: [{ path: '/body/attributes', message: attributes.error }] });
          const evaluated = await session.api.POST('/api/teams/{team}/evaluate', {
            params: { path: { team: session.team.id } },
            body: { participant: String(data.get('participant')), attributes: attributes.value as Schemas['Attributes'] },
          });
          if (evaluated.error || !evaluated.data) return setProblem(asProblem(evaluated.error, evaluated.response)), setAnswer(undefined);
          setProblem(undefined);
          setAnswer(evaluated.data.data);
        }}
      >
        <ProblemBanner problem={problem} fields={['/body/participant', '/body/attributes']} />
        <div class="row">
          <Field label="Participant key" path="/body/participant" problem={problem}>
            {(props) => <input {...props} required defaultValue="user-42" />}
          </Field>
          <Field label="Attributes (JSON)" path="/body/attributes" problem={problem}>
            {(props) => <input {...props} class="code" defaultValue='{"country": "DE"}' />}
          </Field>
        </div>
        <button type="submit">Evaluate</button>
        <p class="hint">Asks the service what it would serve now; nobody is stored or enrolled.</p>
      </form>
      {answer && <Decision evaluation={answer} flag={flag} />}
    </section>
  );
}

function Decision({ evaluation, flag }: { evaluation: Schemas['Evaluation']; flag: string }) {
  const decided = evaluation.features[flag];
  if (!decided) return <p class="hint">The flag is not in the config.</p>;
  const why = decided.reason === 'rule' ? `rule ${decided.rule! + 1} applied` : decided.reason === 'disabled' ? 'the flag is off' : 'no rule applied: its own value';
  return (
    <div class="decision-out" role="status">
      <p>
        Serves <code>{decided.value ?? 'null'}</code> — {why}.
      </p>
      {Object.keys(evaluation.experiments).length > 0 && (
        <ul>
          {Object.entries(evaluation.experiments).map(([experiment, variant]) => (
            <li key={experiment}>
              {experiment}: {variant ?? 'no variant'} ({evaluation.experiment_reasons[experiment]?.replace('_', ' ')})
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
