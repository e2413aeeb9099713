// The signed-in session: the API token, kept for this tab only (sessionStorage — never
// localStorage, never the URL), the typed client made with it, and the team being worked on.
import { createApiClient, type ApiClient, type components } from 'experimentation-api';

export type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];

const TOKEN = 'experimentation.token';
const TEAM = 'experimentation.team';

export interface Session {
  api: ApiClient;
  user: Schemas['User'];
  teams: Schemas['Team'][];
  team: Schemas['Team'];
}

export const storedToken = (): string | null => sessionStorage.getItem(TOKEN);
export const forgetToken = (): void => sessionStorage.removeItem(TOKEN);
export const keepToken = (token: string): void => sessionStorage.setItem(TOKEN, token);
export const chooseTeam = (id: number): void => sessionStorage.setItem(TEAM, String(id));

/** Opens a session with the stored token: the user, its teams (a page of them) and the chosen one; a problem when the token is refused. */
export async function openSession(token: string): Promise<Session | Problem> {
  const api = createApiClient(location.origin, token);
  const user = await api.GET('/api/user');
  if (!user.data) return user.error;
  const teams = await api.GET('/api/teams', { params: { query: { per_page: 100 } } });
  if (!teams.data) return teams.error;
  const chosen = Number(sessionStorage.getItem(TEAM) ?? user.data.data.current_team_id);
  const team = teams.data.data.find((candidate) => candidate.id === chosen) ?? teams.data.data[0];
  if (!team) return { type: 'about:blank', title: 'No team', status: 403, detail: 'This user belongs to no team yet: an operator adds one with the admin CLI (create-team).' };
  return { api, user: user.data.data, teams: teams.data.data, team };
}
