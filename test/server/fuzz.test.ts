// Property-based fuzzing of every operation of the bundled contract (generated/openapi.json).
//
// For each of the 61 operations it sends what the issue lists — bad path segments, bad and
// unknown query parameters, no or broken credentials, malformed JSON, non-object bodies, each
// body property with a wrong type or an extreme value, each required property missing, an
// unknown property added — first as a fixed list (test/fuzz/cases.ts), then FUZZ_RUNS requests
// sampled by fast-check with a fixed seed (FUZZ_SEED). Every answer must be: no 5xx, a status
// the operation documents, a body valid against the documented schema of that status and media
// type, never a 2xx to a request that breaks the contract, and a team that is exactly as it was
// after every batch of rejected requests. Valid but extreme bodies (a 255-character key, emoji
// notes) come last, one at a time: accepted ones answer valid bodies, rejected ones change nothing.
//
import { Agent } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedCases, randomCase, type Case, type Fixture, type WireRequest } from '../fuzz/cases';
import { operations, validatorAt, type Operation } from '../fuzz/spec';
import { arrangeTarget, sendWire, urlPath, type WireResponse } from '../fuzz/target';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_121);
const RUNS = Number(process.env.FUZZ_RUNS ?? 15);
/** Requests a run must have sent per engine at the least, so that it cannot pass vacuously. */
const FLOOR = 61 * RUNS + 900;

// The fuzzer sends thousands of requests a minute with one token, and some hundreds without one:
// budgets that a run cannot use up, so that every answer is the operation's own (a 429 fails).
process.env.RATE_LIMIT_PER_CREDENTIAL ??= '1000000000';
process.env.RATE_LIMIT_PER_ADDRESS ??= '1000000000';

console.log(`[fuzz] seed ${SEED}, ${RUNS} sampled requests per operation (set FUZZ_SEED / FUZZ_RUNS to change; FUZZ_FIXED=all for every fixed value everywhere)`);

type BreachKind = '429' | '5xx' | 'undocumented status' | 'other status' | '2xx' | 'undocumented media type' | 'not JSON' | 'schema' | 'problem status';

interface Breach {
  kind: BreachKind;
  message: string;
  /** Ajv's errors, for kind 'schema'. */
  errors?: Array<{ instancePath: string; keyword: string }>;
}

// ---------------------------------------------------------------------------------------------
// Checking one answer
// ---------------------------------------------------------------------------------------------

/** Long runs of one character written as `a×1000`, and the whole cut at `max`, for readable failures. */
function abbreviate(text: string, max = 400): string {
  const short = text.replace(/(.)\1{15,}/gsu, (run, c: string) => `${c}×${[...run].length}`);
  return short.length > max ? `${short.slice(0, max)}…(${short.length} chars)` : short;
}

function describeRequest(op: Operation, request: WireRequest): string {
  const body = request.body === undefined ? '' : ` body ${abbreviate(JSON.stringify(request.body.toString()))}`;
  const auth = request.authorization === undefined ? 'none' : abbreviate(request.authorization, 30);
  return `${request.method} ${abbreviate(urlPath(op, request), 300)} [auth ${auth}, type ${request.contentType}]${body}`;
}

/** Everything the contract says of one answer to one case. */
function breachesOf(op: Operation, c: Case, response: WireResponse): Breach[] {
  const breaches: Breach[] = [];
  const add = (kind: BreachKind, message: string, errors?: Breach['errors']) => breaches.push({ kind, message, errors });
  if (response.status >= 500) add('5xx', 'a 5xx');
  if (response.status === 429) add('429', 'rate-limited: the fuzzer must not run out of budget (RATE_LIMIT_*)');
  if (c.status !== undefined && response.status !== c.status) add('other status', `not the ${c.status} the contract names`);
  if (c.mustFail && response.status >= 200 && response.status < 300) add('2xx', 'a 2xx to a request that must fail');
  const documented = op.responses.get(response.status);
  if (!documented) {
    add('undocumented status', `${response.status} is not documented on ${op.operationId}`);
    return breaches;
  }
  const media = response.contentType.split(';')[0]!.trim();
  const pointer = documented.get(media);
  if (!pointer) {
    add('undocumented media type', `${media} is not documented for ${response.status}`);
    return breaches;
  }
  if (media === 'text/event-stream') {
    if (!response.text.startsWith('retry: 1000\n\n')) add('schema', 'the stream does not start with retry: 1000');
    return breaches;
  }
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    add('not JSON', 'the body is not JSON');
    return breaches;
  }
  const validate = validatorAt(pointer);
  if (!validate(body)) add('schema', `the body breaks ${pointer}: ${abbreviate(JSON.stringify(validate.errors), 300)}`, validate.errors ?? []);
  // OFREP's error bodies (application/json, validated above) carry an errorCode and no status.
  const ofrepError = op.ofrep && media === 'application/json' && response.status >= 400;
  if (response.status >= 400 && !ofrepError && (body as { status?: unknown }).status !== response.status) add('problem status', "the problem's status is not the HTTP status");
  return breaches;
}

describe('the fuzzed contract', () => {
  it('has the 61 operations, 18 of them with a body', () => {
    expect(operations).toHaveLength(61);
    expect(operations.filter((op) => op.body)).toHaveLength(18);
  });
});

describe.each(engines)('fuzzing every operation on %s', (engine) => {
  const server = useServer(engine);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let target: TestTeam;
  let fixture: Fixture;
  let baseline: unknown;
  const deferred: Array<{ op: Operation; c: Case }> = [];
  const sent = { fixed: 0, sampled: 0, extreme: 0, snapshots: 0 };
  const perOperation = new Map<string, number>();
  /** An accepted (valid) request may have written: the next snapshot may differ for that reason. */
  let acceptedWrite = false;
  let started = 0;
  let cpu = process.cpuUsage();

  function send(op: Operation, request: WireRequest): Promise<WireResponse> {
    perOperation.set(op.operationId, (perOperation.get(op.operationId) ?? 0) + 1);
    return sendWire(server().baseUrl, agent, op, request);
  }

  /** Sends one case and answers what is wrong with the answer; '' when nothing is. */
  async function attempt(op: Operation, c: Case): Promise<{ response: WireResponse; failure: string }> {
    const response = await send(op, c.request);
    const unexplained = breachesOf(op, c, response);
    if (unexplained.length === 0) return { response, failure: '' };
    const context = `${op.label} — ${abbreviate(c.label, 200)}\n  ${describeRequest(op, c.request)}\n  → ${response.status} ${response.contentType} ${abbreviate(response.text, 600)}`;
    return { response, failure: `${unexplained.map((b) => b.message).join('; ')} — ${context}` };
  }

  /** Everything of the team its owner can read, in one comparable value. */
  async function snapshot(): Promise<unknown> {
    const get = async (path: string) => {
      sent.snapshots++;
      const response = await fetch(server().baseUrl + path, { headers: { authorization: `Bearer ${target.token}` } });
      expect(response.status, path).toBe(200);
      return ((await response.json()) as { data: unknown }).data;
    };
    const team = (await get(`/api/teams/${target.id}?include=events,experiments.variants,participants,features`)) as {
      experiments: Array<{ key: string; variants: Array<{ key: string }> }>;
    };
    const statistics = [];
    for (const experiment of team.experiments) {
      for (const variant of experiment.variants) {
        const path = `/api/teams/${target.id}/experiments/${encodeURIComponent(experiment.key)}/variants/${encodeURIComponent(variant.key)}/statistics`;
        statistics.push(await get(path));
      }
    }
    const config = await get(`/api/teams/${target.id}/config`);
    return { team, statistics, config };
  }

  /** Compares the team with the baseline, which then becomes the team as it is (so one breach is told once). */
  async function unchanged(what: string): Promise<string> {
    const after = await snapshot();
    const same = JSON.stringify(after) === JSON.stringify(baseline);
    const before = baseline;
    baseline = after;
    const explained = acceptedWrite;
    acceptedWrite = false;
    if (same || explained) return '';
    return `the team changed after ${what}:\n  before ${abbreviate(JSON.stringify(before), 1500)}\n  after  ${abbreviate(JSON.stringify(after), 1500)}`;
  }

  beforeAll(async () => {
    ({ target, fixture } = await arrangeTarget(server()));
    baseline = await snapshot();
    started = performance.now();
    cpu = process.cpuUsage();
  });

  afterAll(() => agent.destroy());

  it.each(operations.map((op) => [op.label, op] as const))(
    '%s: no 5xx, documented statuses and bodies, no 2xx to a broken request, and nothing changes',
    async (_label, op) => {
      const failures: string[] = [];
      for (const c of fixedCases(op, fixture)) {
        // A valid write would change the team: those go one at a time, last.
        if (!c.mustFail && !op.isSafe) {
          deferred.push({ op, c });
          continue;
        }
        sent.fixed++;
        const { failure } = await attempt(op, c);
        if (failure) failures.push(failure);
      }
      const property = fc.asyncProperty(randomCase(op, fixture), async (c) => {
        sent.sampled++;
        const { failure } = await attempt(op, c);
        if (failure) throw new Error(failure);
      });
      const sampled = await fc.check(property, { seed: SEED + op.index, numRuns: RUNS });
      if (sampled.failed) failures.push(`sampled: ${fc.defaultReportMessage(sampled)}`);
      const changed = await unchanged(`the rejected requests to ${op.label}`);
      if (changed) failures.push(changed);
      expect(failures, `${failures.length} failures:\n\n${failures.join('\n\n')}`).toEqual([]);
    },
  );

  it('when valid extreme values are sent, one at a time, then an accepted one answers its schema and a rejected one changes nothing', async () => {
    // (fewer when a filter ran only some operations)
    expect(deferred.length).toBeGreaterThanOrEqual(perOperation.size === operations.length ? 20 : 0);
    const failures: string[] = [];
    for (const { op, c } of deferred) {
      sent.extreme++;
      const { response, failure } = await attempt(op, c);
      if (failure) failures.push(failure);
      if (response.status >= 200 && response.status < 300) acceptedWrite = true; // accepted: the team may change
      const changed = await unchanged(`${op.label} — ${c.label}, answered ${response.status}`);
      if (changed) failures.push(changed);
    }
    expect(failures, `${failures.length} failures:\n\n${failures.join('\n\n')}`).toEqual([]);
  });

  it(`when every operation was fuzzed, then at least ${FLOOR} requests were sent`, () => {
    const total = sent.fixed + sent.sampled + sent.extreme;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const used = process.cpuUsage(cpu);
    const cpuSeconds = ((used.user + used.system) / 1e6).toFixed(1);
    console.log(
      `[fuzz] ${engine}: ${total} requests to ${perOperation.size} operations in ${seconds} s (${cpuSeconds} s CPU in this process) ` +
        `(${sent.fixed} fixed, ${sent.sampled} sampled, ${sent.extreme} valid extremes one at a time; ${sent.snapshots} snapshot reads; seed ${SEED}, ${RUNS} runs per operation)`,
    );
    expect(perOperation.size).toBe(61);
    for (const [operationId, count] of perOperation) expect(count, operationId).toBeGreaterThanOrEqual(RUNS + 10);
    expect(total).toBeGreaterThanOrEqual(FLOOR);
  });
});
