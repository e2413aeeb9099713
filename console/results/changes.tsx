// An experiment's recent changes beside its results, from the audit log: who started it, who
// changed its coverage or targeting and when — so that a jump in a chart has its explanation next
// to it.
import type { Schemas, Session } from '../session';
import { ProblemBanner, useAnswer, when } from '../ui';

type Entry = Schemas['AuditEntry'];
const SHOWN = 20;

function actorOf(actor: Entry['actor']): string {
  if (actor.type === 'user') return actor.email ?? `user ${actor.user_id}`;
  if (actor.type === 'admin-cli') return 'an operator (admin CLI)';
  return `the service${actor.reason ? ` (${actor.reason})` : ''}`;
}

/** A field's value as a short text: numbers and strings as they are, anything else as JSON. */
function shown(value: unknown): string {
  const text = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** What an entry did, in words: `started it`, `changed coverage from 10 to 50`. */
export function changeOf(entry: Entry): string {
  if (entry.action !== 'updated') return `${entry.action} it`;
  const before = entry.before ?? {};
  const after = entry.after ?? {};
  const fields = Object.keys(after);
  if (fields.length === 0) return 'updated it';
  return `changed ${fields.map((field) => `${field.replaceAll('_', ' ')} from ${shown(before[field] ?? null)} to ${shown(after[field])}`).join('; ')}`;
}

export function RecentChanges({ session, experiment }: { session: Session; experiment: string }) {
  const { api, team } = session;
  const log = useAnswer(() => api.GET('/api/teams/{team}/audit-log', { params: { path: { team: team.id }, query: { resource_type: 'experiment', resource_key: experiment, limit: SHOWN } } }), [team.id, experiment]);
  return (
    <section class="changes" aria-labelledby="changes-title">
      <h3 id="changes-title">Recent changes</h3>
      <ProblemBanner problem={log.problem} />
      {log.data?.data.length === 0 && <p class="hint">No change recorded.</p>}
      <ol class="plain">
        {log.data?.data.map((entry) => (
          <li key={entry.id} data-action={entry.action}>
            <time dateTime={entry.at}>{when(entry.at)}</time> — {actorOf(entry.actor)} {changeOf(entry)}
          </li>
        ))}
      </ol>
    </section>
  );
}
