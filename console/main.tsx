// The console: sign-in, the team, and a page per resource, all through the package's typed
// client. Pages are addressed in the hash (#/experiments/checkout_redesign), so the server
// serves one page and the token never travels in a URL.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { EventsPage } from './events';
import { ExperimentPage } from './experiment';
import { ExperimentsPage } from './experiments';
import { FlagPage } from './flag';
import { FlagsPage } from './flags';
import { ParticipantsPage } from './participants';
import { chooseTeam, forgetToken, keepToken, openSession, storedToken, type Problem, type Session } from './session';
import { TeamPage } from './team';

const SECTIONS = [
  ['experiments', 'Experiments'],
  ['flags', 'Flags'],
  ['events', 'Events'],
  ['participants', 'Participants'],
  ['team', 'Team'],
] as const;

/** The route in the hash: `#/flags/new_banner` → ['flags', 'new_banner']; an old /results link's `#checkout` opens that experiment. */
function route(): string[] {
  const hash = decodeURIComponent(location.hash.replace(/^#/, ''));
  if (hash === '' || hash === '/') return ['experiments'];
  if (!hash.startsWith('/')) return ['experiments', hash];
  return hash.slice(1).split('/');
}

function useRoute(): string[] {
  const [current, setCurrent] = useState(route);
  useEffect(() => {
    const changed = () => setCurrent(route());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return current;
}

function SignIn({ problem, onToken }: { problem?: Problem; onToken: (token: string) => void }) {
  return (
    <main class="sign-in">
      <h1>Experiments console</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const input = (event.currentTarget as HTMLFormElement).elements.namedItem('token') as HTMLInputElement;
          onToken(input.value.trim());
        }}
      >
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" required aria-invalid={problem !== undefined} aria-describedby="token-hint token-problem" />
        <p class="hint" id="token-hint">
          An operator makes one with <code>npm run admin -- create-token --email you@example.com</code>. It stays in this tab only (sessionStorage) and is sent to this server's API and nowhere else.
        </p>
        {problem && (
          <p class="field-problem" id="token-problem" role="alert">
            {problem.status === 401 ? 'That token is not valid (or was revoked).' : problem.detail}
          </p>
        )}
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
      <p class="hint">
        <a href="/docs">API docs</a> · <a href="/changelog">Changelog</a>
      </p>
    </main>
  );
}

function Shell({ session, onSignOut, onTeam }: { session: Session; onSignOut: () => void; onTeam: (id: number) => void }) {
  const [section, key] = useRoute();
  useEffect(() => window.scrollTo(0, 0), [section, key]);
  return (
    <>
      <header class="top">
        <a class="brand" href="#/experiments">
          Experiments console
        </a>
        <label class="team-switch">
          <span class="visually-hidden">Team</span>
          <select value={session.team.id} onChange={(event) => onTeam(Number(event.currentTarget.value))} aria-label="Team">
            {session.teams.map((team) => (
              <option key={team.id} value={team.id}>
                {team.name}
              </option>
            ))}
          </select>
        </label>
        <span class="who">{session.user.email}</span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav class="sections" aria-label="Sections">
        {SECTIONS.map(([id, label]) => (
          <a key={id} href={`#/${id}`} aria-current={section === id ? 'page' : undefined}>
            {label}
          </a>
        ))}
        <a href="/docs">API docs</a>
      </nav>
      <main id="main">{page(session, section ?? 'experiments', key)}</main>
    </>
  );
}

function page(session: Session, section: string, key: string | undefined) {
  switch (section) {
    case 'experiments':
      return key ? <ExperimentPage key={key} session={session} experimentKey={key} /> : <ExperimentsPage session={session} />;
    case 'flags':
      return key ? <FlagPage key={key} session={session} flagKey={key} /> : <FlagsPage session={session} />;
    case 'events':
      return <EventsPage session={session} />;
    case 'participants':
      return <ParticipantsPage session={session} participantKey={key} />;
    case 'team':
      return <TeamPage session={session} />;
    default:
      return <p class="problem">There is no page #{section}.</p>;
  }
}

function Console() {
  const [session, setSession] = useState<Session>();
  const [problem, setProblem] = useState<Problem>();
  const [opening, setOpening] = useState(storedToken() !== null);

  const open = async () => {
    const token = storedToken();
    if (!token) return setOpening(false);
    setOpening(true);
    const opened = await openSession(token).catch((): Problem => ({ type: 'about:blank', title: 'Request failed', status: 0, detail: 'The service did not answer.' }));
    setOpening(false);
    if ('api' in opened) return setSession(opened), setProblem(undefined);
    if (opened.status === 401) forgetToken();
    setSession(undefined);
    setProblem(opened);
  };
  useEffect(() => void open(), []);

  if (opening) return <p class="hint">Opening…</p>;
  if (!session)
    return (
      <SignIn
        problem={problem}
        onToken={(token) => {
          keepToken(token);
          void open();
        }}
      />
    );
  return (
    <Shell
      session={session}
      onSignOut={() => {
        forgetToken();
        setSession(undefined);
      }}
      onTeam={(id) => {
        chooseTeam(id);
        location.hash = '#/experiments';
        void open();
      }}
    />
  );
}

render(<Console />, document.getElementById('app')!);
