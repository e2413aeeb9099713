// `npm run verify -- --base-url URL --token T --ingest-key K [--team ID] [--prefix P] [--report junit [--report-file F]]`:
// checks a deployment of the Experimentation Service API against the bundled contract (see
// scenario.ts for what it does). Exit 0: every operation conforms; 1: a violation; 2: usage.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { failing, readCommandLine, type Fail } from '../server/cli/command-line';
import { contract } from './contract';
import { junit, outcomes, table } from './report';
import { exercise } from './scenario';
import { Session } from './session';

const usage = `usage: npm run verify -- --base-url URL --token API_TOKEN --ingest-key INGEST_KEY [--team ID] [--prefix KEY_PREFIX] [--report junit] [--report-file verify-report.xml]
  The token and key may also come from VERIFY_TOKEN and VERIFY_INGEST_KEY. The run creates, and deletes again, only resources whose keys start with the prefix (default: verify_ and 8 random hex digits).`;

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
    help: { type: 'boolean', default: false },
  });
  if (positionals.length > 0) fail(`Unexpected argument '${positionals[0]}'.`);
  const baseUrl = values['base-url'];
  if (!baseUrl || !/^https?:\/\/[^/]+/.test(baseUrl)) fail('--base-url must be the http(s) URL the API is served at');
  if (!values.token || !values['ingest-key']) fail('--token and --ingest-key are required');
  const team = values.team === undefined ? undefined : Number(values.team);
  if (team !== undefined && !(Number.isSafeInteger(team) && team >= 1)) fail(`--team must be a team id, not '${values.team}'`);
  if (!/^[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*$/.test(values.prefix) || values.prefix.length > 200) fail('--prefix must be letters and digits joined by single underscores');
  if (values.report !== undefined && values.report !== 'junit') fail(`--report takes junit, not '${values.report}'`);
  return { baseUrl: baseUrl.replace(/\/+$/, ''), token: values.token, ingestKey: values['ingest-key'], team, prefix: values.prefix, junitFile: values.report ? values['report-file'] : undefined };
}

const { baseUrl, token, ingestKey, team, prefix, junitFile } = options();
console.log(`Checking ${baseUrl} against the contract ${contract.info.title} ${contract.info.version}; its own keys start with ${prefix}.`);
const started = performance.now();
const session = new Session({ baseUrl, token, ingestKey });
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
if (aborted) console.log(`\nThe run stopped early: ${aborted}`);
console.log(`\n${results.length - failed.length} of ${results.length} operations conform (${calls} calls, ${seconds.toFixed(1)} s)${junitFile ? `; JUnit report: ${junitFile}` : ''}.`);
process.exit(failed.length > 0 || aborted ? 1 : 0);
