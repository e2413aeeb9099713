import { createTeam, createToken, revokeAllTokens, revokeToken, rotateIngestKey, setQuota, setRole } from '../admin/service';
import { isMemberRole, MEMBER_ROLES } from '../../domain/member-roles';
import { kindOf } from '../auth/credentials';
import type { Storage } from '../storage/database';
import { commandLineExit, onStorage, readCommandLine, refusing, type Fail } from './command-line';

const usage = `Usage: npm run admin -- <command> [options]

  create-team  --name NAME --email EMAIL [--json|--shell]   create a team (and its user if new): prints token and ingest key
  create-token --email EMAIL [--read-only] [--json|--shell]
                                                    issue another API token for a user; --read-only: it only
                                                    reads (acts as viewer), whatever the user's role
  set-role     --team ID --email EMAIL --role viewer|editor|admin [--json]
                                                    make the user (created if new) a member of the team with
                                                    this role, or change a member's role
  revoke-token --token TOKEN|- [--json]             revoke one API token (401 from the next request on);
                                                    '-' reads it from standard input, out of the process list
  revoke-token --email EMAIL --all [--json]         revoke every API token of a user
  rotate-ingest-key --team ID [--json|--shell]      give a team a new ingest key (printed); the old one is 401 at once
  set-quota    --team ID --ingest-limit N|none [--json]   monthly ingest limit of a team

--shell prints what a shell needs next: \`export TEAM=… TOKEN=… INGEST_KEY=…\` (those the command made),
for \`eval "$(npm run -s admin -- create-team … --shell)"\`.

Storage: DATABASE_URL (PostgreSQL) or DATA_DIR (SQLite, default ./data), as for the server.`;

const options = {
  name: { type: 'string' },
  email: { type: 'string' },
  team: { type: 'string' },
  'ingest-limit': { type: 'string' },
  role: { type: 'string' },
  'read-only': { type: 'boolean', default: false },
  token: { type: 'string' },
  all: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  shell: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** What the admin command talks to: its output streams, its standard input, and the storage it opens. */
export interface AdminIo {
  out(text: string): void;
  err(text: string): void;
  /** Standard input, read only for `--token -`. */
  stdin(): string;
  /** Opened only once the command line is valid: a mistyped command touches no database. */
  open(): Promise<Storage>;
}

type Values = ReturnType<typeof readCommandLine<typeof options>>['values'];
type Action = (db: Storage['db']) => Promise<unknown>;
type Made = { team?: { id: number }; token?: string; ingest_key?: string };

const fail: Fail = refusing(usage);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Runs one admin command; answers its exit code (0 done, 1 failed, 2 usage error). */
export async function runAdmin(args: string[], io: AdminIo): Promise<number> {
  let action: Action;
  let values: Values;
  try {
    ({ action, values } = commandOf(args, io));
  } catch (error) {
    return commandLineExit(error, io);
  }
  return onStorage(io, async (storage) => {
    const result = await action(storage.db);
    io.out(values.shell ? shellExports(result as Made) : values.json ? JSON.stringify(result) : JSON.stringify(result, null, 2));
  });
}

function commandOf(args: string[], io: AdminIo): { action: Action; values: Values } {
  const { positionals, values } = readCommandLine(usage, fail, options, args);
  const [command, ...extra] = positionals;
  if (!command) fail('No command given.');
  if (values.json && values.shell) fail('Give --json or --shell, not both.');
  if (values.shell && !['create-team', 'create-token', 'rotate-ingest-key'].includes(command)) fail('--shell goes with create-team, create-token and rotate-ingest-key.');
  if (values['read-only'] && command !== 'create-token') fail('--read-only goes with create-token.');
  if (extra.length > 0) fail(kindOf(extra[0]) ? 'Unexpected argument (a credential? give a token with --token).' : `Unexpected argument '${extra[0]}'.`);
  return { action: actionOf(command, values, io), values };
}

function actionOf(name: string, values: Values, io: AdminIo): Action {
  const required = (option: 'name' | 'email' | 'team' | 'ingest-limit' | 'token' | 'role') => requiredValue(values, option);
  switch (name) {
    case 'create-team': {
      const input = { name: bounded(values, 'name'), email: bounded(values, 'email', EMAIL) };
      return (db) => createTeam(db, input);
    }
    case 'create-token': {
      const email = bounded(values, 'email', EMAIL);
      const readOnly = values['read-only'];
      return (db) => createToken(db, email, { readOnly });
    }
    case 'set-role': {
      const team = integer('team', required('team'));
      const email = bounded(values, 'email', EMAIL);
      const role = required('role');
      if (!isMemberRole(role)) fail(`--role must be one of ${MEMBER_ROLES.join(', ')}, got '${role}'`);
      return (db) => setRole(db, team, email, role);
    }
    case 'revoke-token': {
      if (values.token !== undefined && (values.email !== undefined || values.all)) fail('Give either --token TOKEN or --email EMAIL --all, not both.');
      if (values.email !== undefined) {
        const email = bounded(values, 'email', EMAIL);
        if (!values.all) fail('--email revokes every token of the user: add --all (or give --token to revoke one).');
        return (db) => revokeAllTokens(db, email);
      }
      if (values.all) fail('--all needs --email EMAIL.');
      const token = apiToken(required('token'), io);
      return (db) => revokeToken(db, token);
    }
    case 'rotate-ingest-key': {
      const team = integer('team', required('team'));
      return (db) => rotateIngestKey(db, team);
    }
    case 'set-quota': {
      const team = integer('team', required('team'));
      const limit = required('ingest-limit');
      const ingestLimit = limit === 'none' ? null : integer('ingest-limit', limit);
      return (db) => setQuota(db, team, ingestLimit);
    }
    default:
      fail(`Unknown command '${name}'.`);
  }
}

function requiredValue(values: Values, name: 'name' | 'email' | 'team' | 'ingest-limit' | 'token' | 'role'): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') fail(`--${name} is required`);
  return value;
}

// The same bounds as the contract's User and Team schemas: what is stored must be answerable.
function bounded(values: Values, name: 'name' | 'email', pattern = /^\S(.*\S)?$/): string {
  const value = requiredValue(values, name);
  if (value.length > 255 || !pattern.test(value)) fail(`--${name} must be 1–255 characters${name === 'email' ? ' and an e-mail address' : ' without leading or trailing spaces'}`);
  return value;
}

// Messages about a --token never repeat it: stderr may end up in a log.
function apiToken(given: string, io: AdminIo): string {
  const token = given === '-' ? io.stdin().trim() : given;
  if (kindOf(token) === 'ingest-key') fail('--token is an ingest key, not an API token; replace it with rotate-ingest-key --team ID');
  if (!/^est_[A-Za-z0-9_-]{1,196}$/.test(token)) fail('--token must be an API token (est_…)');
  return token;
}

function integer(name: string, text: string): number {
  if (!/^\d{1,15}$/.test(text)) fail(`--${name} must be a non-negative integer, got '${text}'`);
  return Number(text);
}

/** `export TEAM=1 TOKEN=est_… INGEST_KEY=esk_…`: credentials are letters, digits, `_` and `-`, safe unquoted. */
function shellExports({ team, token, ingest_key }: Made): string {
  const pairs = [team && `TEAM=${team.id}`, token && `TOKEN=${token}`, ingest_key && `INGEST_KEY=${ingest_key}`];
  return `export ${pairs.filter(Boolean).join(' ')}`;
}
