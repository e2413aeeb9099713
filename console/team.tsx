// The team: its config as SDKs see it, how its ingest key is rotated, and its quota.
import type { Session } from './session';
import { ProblemBanner, useAnswer, when } from './ui';

export function TeamPage({ session }: { session: Session }) {
  const { team } = session;
  const config = useAnswer(() => session.api.GET('/api/teams/{team}/config', { params: { path: { team: team.id } } }), [team.id]);
  return (
    <>
      <h1>{team.name}</h1>
      <dl class="summary">
        <div>
          <dt>team id</dt>
          <dd>{team.id}</dd>
        </div>
        <div>
          <dt>experiments</dt>
          <dd>{team.experiments_count}</dd>
        </div>
        <div>
          <dt>events</dt>
          <dd>{team.events_count}</dd>
        </div>
        <div>
          <dt>participants</dt>
          <dd>{team.participants_count}</dd>
        </div>
        <div>
          <dt>since</dt>
          <dd>{when(team.created_at).slice(0, 10)}</dd>
        </div>
      </dl>
      <h2>Quota</h2>
      <p>
        {team.ingest_limit === null
          ? `No monthly ingest limit; ${team.ingest_used.toLocaleString('en')} ingests accepted this month (UTC).`
          : `${team.ingest_used.toLocaleString('en')} of ${team.ingest_limit.toLocaleString('en')} accepted ingests used this calendar month (UTC); past the limit, ingests answer 402 and store nothing.`}{' '}
        An operator sets it with{' '}
        <code>npm run admin -- set-quota --team {team.id} --ingest-limit N|none</code>.
      </p>
      {team.ingest_limit !== null && (
        <p>
          <meter id="quota-used" aria-label="Ingest quota used this month" min={0} max={Math.max(1, team.ingest_limit)} high={0.9 * team.ingest_limit} value={team.ingest_used} />
        </p>
      )}
      <h2>Ingest key</h2>
      <p>
        Apps report participants and events, and SDKs read the config, with the team's ingest key (<code>esk_…</code>): it can do nothing else, so it may ship in client code. It is shown only when made. To replace it — say it
        leaked — an operator runs <code>npm run admin -- rotate-ingest-key --team {team.id}</code>: the new key is printed once, and the old one is refused from the next request on.
      </p>
      <h2>Config</h2>
      <p class="hint">What SDKs see (GET …/config): the running experiments and the flags, with everything needed to decide locally.</p>
      <ProblemBanner problem={config.problem} />
      {config.data && (
        <>
          <p>
            {config.data.data.experiments.length} running experiments, {config.data.data.features.length} flags.
          </p>
          <details>
            <summary>The config as JSON</summary>
            <pre class="code" tabIndex={0}>{JSON.stringify(config.data.data, null, 2)}</pre>
          </details>
        </>
      )}
    </>
  );
}
