// `npm run mock -- [--port 4010] [--host 127.0.0.1] [--team 1] [--token T] [--ingest-key K]`:
// the mock server (see app.ts), for clients that have no server yet.
import { pino } from 'pino';
import { failing, readCommandLine, type Fail } from '../cli/command-line';
import { createMockApp } from './app';

const usage = 'usage: npm run mock -- [--port 4010] [--host 127.0.0.1] [--team 1] [--token mock-token] [--ingest-key mock-ingest-key]';
const CREDENTIAL = /^[A-Za-z0-9_-]{1,200}$/;

const fail: Fail = failing(usage);

function options() {
  const { values, positionals } = readCommandLine(usage, fail, {
    port: { type: 'string', default: process.env.PORT ?? '4010' },
    host: { type: 'string', default: process.env.HOST ?? '127.0.0.1' },
    team: { type: 'string', default: '1' },
    token: { type: 'string', default: 'mock-token' },
    'ingest-key': { type: 'string', default: 'mock-ingest-key' },
    help: { type: 'boolean', default: false },
  });
  if (positionals.length > 0) fail(`Unexpected argument '${positionals[0]}'.`);
  const port = Number(values.port);
  const team = Number(values.team);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be a port number, not '${values.port}'`);
  if (!Number.isSafeInteger(team) || team < 1) fail(`--team must be a team id (a whole number from 1), not '${values.team}'`);
  for (const name of ['token', 'ingest-key'] as const) {
    if (!CREDENTIAL.test(values[name])) fail(`--${name} must be 1–200 letters, digits, '_' or '-'`);
  }
  if (new Set([values.token, values['ingest-key']]).size < 2) fail('--token and --ingest-key must differ');
  return { port, host: values.host, team, token: values.token, ingestKey: values['ingest-key'] };
}

const { port, host, team, token, ingestKey } = options();
const logger = pino({ level: process.env.LOG_LEVEL ?? 'info' });
const server = createMockApp({ logger, team, token, ingestKey }).listen(port, host, () => {
  const address = server.address();
  const url = `http://${host}:${typeof address === 'object' && address ? address.port : port}`;
  logger.info({ url, team }, `mock listening on ${url} (team ${team}; Authorization: Bearer ${token} or the ingest key ${ingestKey}; Prefer: code=<status> or example=<name>)`);
});
server.on('error', (error) => {
  logger.fatal({ err: error }, 'the mock failed to listen');
  process.exit(1);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => server.close(() => process.exit(0)));
