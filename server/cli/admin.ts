import { parseArgs } from 'node:util';
import { createTeam, createToken, setQuota } from '../admin/service';
import { settingsFromEnv } from '../settings';
import { openStorage } from '../storage/database';

const usage = `Usage: npm run admin -- <command> [options]

  create-team  --name NAME --email EMAIL [--json]   create a team (and its user if new): prints token and ingest key
  create-token --email EMAIL [--json]               issue another API token for a user
  set-quota    --team ID --ingest-limit N|none [--json]   monthly ingest limit of a team

Storage: DATABASE_URL (PostgreSQL) or DATA_DIR (SQLite, default ./data), as for the server.`;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    email: { type: 'string' },
    team: { type: 'string' },
    'ingest-limit': { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') fail(`--${name} is required`);
  return value as string;
}

function fail(message: string): never {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}

function integer(name: string, text: string): number {
  if (!/^\d{1,15}$/.test(text)) fail(`--${name} must be a non-negative integer, got '${text}'`);
  return Number(text);
}

const [command] = positionals;
if (values.help || !command) {
  console.log(usage);
  process.exit(command || values.help ? 0 : 2);
}

const storage = await openStorage(settingsFromEnv());
try {
  let result: unknown;
  switch (command) {
    case 'create-team':
      result = await createTeam(storage.db, { name: required('name'), email: required('email') });
      break;
    case 'create-token':
      result = await createToken(storage.db, required('email'));
      break;
    case 'set-quota': {
      const limit = required('ingest-limit');
      result = await setQuota(storage.db, integer('team', required('team')), limit === 'none' ? null : integer('ingest-limit', limit));
      break;
    }
    default:
      fail(`Unknown command '${command}'.`);
  }
  console.log(values.json ? JSON.stringify(result) : JSON.stringify(result, null, 2));
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await storage.close();
}
