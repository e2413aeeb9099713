// `npm run verify -- --base-url URL --token T --ingest-key K [--team ID] [--prefix P] [--report junit [--report-file F]]
// [--timeout S] [--deadline S] [--max-response-bytes N]`:
// checks a deployment of the Experimentation Service API against the bundled contract (see
// scenario.ts for what it does). Exit 0: every operation conforms; 1: a violation; 2: usage.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { failing, readCommandLine, type Fail } from '../server/cli/command-line';
import { contract } from './contract';
import { junit, outcomes, table, visible } from './report';
import { exercise } from './scenario';
import { Session } from './session';

const DEFAULTS = { timeout: 30, deadline: 600, maxResponseBytes: 10 * 1024 * 1024 };

const usage = `usage: npm run verify -- --base-url URL --token API_TOKEN --ingest-key INGEST_KEY [--team ID] [--prefix KEY_PREFIX] [--report junit] [--report-file verify-report.xml]
                          [--timeout SECONDS] [--deadline SECONDS] [--max-response-bytes BYTES]
  The token and key may also come from VERIFY_TOKEN and VERIFY_INGEST_KEY. The run creates, and deletes again, only resources whose keys start with the prefix (default: verify_ and 8 random hex digits).
  The base URL's path is kept: with http://host/experiments the kit calls http://host/experiments/api/….
  --timeout: seconds one call may take, answer and body together (default ${DEFAULTS.timeout}); a call that takes longer fails.
  --deadline: seconds the whole run may take (default ${DEFAULTS.deadline}); then the call in flight is cut off and the run stops, failed.
  --max-response-bytes: bytes an answer's body may have (default ${DEFAULTS.maxResponseBytes}, 10 MiB); a larger one fails its call, read no further.`;

const fail: Fail = failing(usage);

function options() {
  const { values, positionals } = readCommandLine(usage, fail, {
    'base-url': { type: 'string' },
    token: { type: 'string', default: process.env.VERIFY_TOKEN },
    'ingest-key': { type: 'string', default: process.env.VERIFY_INGEST_KEY },
    team: { type: 'string' },
    prefix: { type: 'string', default: `verify_${randomBytes(4).toString('hex')}` },
    report: { type: 'string' },
    'report-file': { type: 'string', default: 'verify-report.xml' },
    timeout: { type: 'string', default: String(DEFAULTS.timeout) },
    deadline: { type: 'string', default: String(DEFAULTS.deadline) },
    'max-response-bytes': { type: 'string', default: String(DEFAULTS.maxResponseBytes) },
    help: { type: 'boolean', default: false },
  });
  if (positionals.length > 0) fail(`Unexpected argument '${positionals[0]}'.`);
  const baseUrl = baseUrlOf(values['base-url']);
  if (!values.token || !values['ingest-key']) fail('--token and --ingest-key are required');
  const team = values.team === undefined ? undefined : Number(values.team);
  if (team !== undefined && !(Number.isSafeInteger(team) && team >= 1)) fail(`--team must be a team id, not '${values.team}'`);
  if (!/^[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*$/.test(values.prefix) || values.prefix.length > 200) fail('--prefix must be letters and digits joined by single underscores');
  if (values.report !== undefined && values.report !== 'junit') fail(`--report takes junit, not '${values.report}'`);
  const limits = {
    timeoutMs: positive('--timeout', values.timeout, 86_400) * 1000,
    deadlineMs: positive('--deadline', values.deadline, 86_400) * 1000,
    maxResponseBytes: Math.floor(positive('--max-response-bytes', values['max-response-bytes'], 2 ** 31)),
  };
  return { baseUrl, token: values.token, ingestKey: values['ingest-key'], team, prefix: values.prefix, junitFile: values.report ? values['report-file'] : undefined, limits };
}

/** The API's URL as given, path kept and trailing slashes dropped; no query, fragment or user info. */
function baseUrlOf(given: string | undefined): string {
  let url: URL | undefined;
  try {
    url = given ? new URL(given) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash || url.username || url.password || /[?#]/.test(given!)) {
    return fail('--base-url must be the http(s) URL the API is served at (a path is kept; no query, fragment or user info)');
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** A positive decimal number of at most `max`. */
function positive(name: string, given: string, max: number): number {
  const value = /^[0-9]+(\.[0-9]+)?$/.test(given) ? Number(given) : NaN;
  if (!(value > 0 && value <= max)) fail(`${name} must be a positive number up to ${max}, not '${given}'`);
  return value;
}

const { baseUrl, token, ingestKey, team, prefix, junitFile, limits } = options();
console.log(`Checking ${baseUrl} against the contract ${contract.info.title} ${contract.info.version}; its own keys start with ${prefix}.`);
const started = performance.now();
const session = new Session({ baseUrl, token, ingestKey }, { timeoutMs: limits.timeoutMs, deadline: started + limits.deadlineMs, maxResponseBytes: limits.maxResponseBytes });
let aborted: string | undefined;
try {
  await exercise(session, prefix, team);
} catch (error) {
  aborted = (error as Error).message;
}
const results = outcomes(session);
const seconds = (performance.now() - started) / 1000;
console.log(`\n${table(results)}`);
if (junitFile) writeFileSync(junitFile, junit(results, baseUrl, seconds));
const failed = results.filter((r) => r.failures.length > 0);
const calls = results.reduce((sum, r) => sum + r.checks.length, 0);
if (aborted) console.log(`\nThe run stopped early: ${visible(aborted)}; resources whose keys start with ${prefix} may remain.`);
console.log(`\n${results.length - failed.length} of ${results.length} operations conform (${calls} calls, ${seconds.toFixed(1)} s)${junitFile ? `; JUnit report: ${junitFile}` : ''}.`);
process.exit(failed.length > 0 || aborted ? 1 : 0);
