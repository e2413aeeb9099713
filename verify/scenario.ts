// What the kit does to a deployment: every operation of the contract, its success and the
// documented errors it can provoke without harming data, on resources of its own — keys that
// start with a prefix unique to the run — which it deletes again at the end, whatever happened.
// It reads the team's other resources (lists, config) but never writes them: ingests name the
// kit's own experiment or its own flag's rollout, so no other experiment enrols its participants.
import { rollouts } from './rollouts';
import type { Session } from './session';

const TEAM = '/api/teams/{team}';
const EVENT = `${TEAM}/events/{event}`;
const EXPERIMENT = `${TEAM}/experiments/{experiment}`;
const VARIANT = `${EXPERIMENT}/variants/{variant}`;
const FEATURE = `${TEAM}/features/{feature}`;
const OFREP = `${TEAM}/ofrep/v1/evaluate/flags`;
const PARTICIPANT = `${TEAM}/participants/{participant}`;

/** The keys the run creates: `<prefix>_goal`, `<prefix>_test`, … and participants `<prefix>-1`, `<prefix>-2`. */
export function keysFor(prefix: string) {
  return {
    event: `${prefix}_goal`,
    valueEvent: `${prefix}_revenue`,
    experiment: `${prefix}_test`,
    feature: `${prefix}_flag`,
    participants: [`${prefix}-1`, `${prefix}-2`],
  };
}

/** The team the credentials work on: the one given, or the token's current team. */
async function teamOf(session: Session, given: number | undefined): Promise<number | undefined> {
  await session.call({ purpose: 'the health check needs no credential', operation: 'GET /api/health', credential: 'none', expect: 200 });
  await session.call({ purpose: 'an unknown credential is refused', operation: 'GET /api/health', credential: { bearer: 'not_a_credential' }, expect: 401 });
  await session.call({ purpose: 'the token names its user', operation: 'GET /api/user', expect: 200 });
  await session.call({ purpose: 'no credential is 401', operation: 'GET /api/user', credential: 'none', expect: 401 });
  await session.call({ purpose: 'an ingest key cannot read the user', operation: 'GET /api/user', credential: 'ingest-key', expect: 403 });
  const current = await session.call({ purpose: "the token's current team", operation: 'GET /api/current-team', expect: 200 });
  await session.call({ purpose: 'the teams of the user', operation: 'GET /api/teams', query: 'per_page=5&sort=-id', expect: 200 });
  await session.call({ purpose: 'a per_page above 100 is 400', operation: 'GET /api/teams', query: 'per_page=101', expect: 400 });
  return given ?? current?.data?.id;
}

export async function exercise(session: Session, prefix: string, givenTeam?: number): Promise<void> {
  const team = await teamOf(session, givenTeam);
  if (team === undefined) throw new Error('no team to work in: pass --team, or give a token whose user has a current team');
  const keys = keysFor(prefix);
  const path = { team };
  const event = { ...path, event: keys.event };
  const experiment = { ...path, experiment: keys.experiment };
  try {
    await readTeam(session, path);
    await events(session, path, event);
    await experimentLifecycle(session, path, event, experiment, keys.participants);
    await features(session, path, keys.feature, keys.event, keys.participants[0]!);
    await auditLog(session, path, keys.feature);
    await webhooks(session, path, prefix);
  } finally {
    await cleanUp(session, path, keys);
  }
}

async function readTeam(session: Session, path: { team: number }) {
  await session.call({ purpose: 'the team with its events embedded', operation: `GET ${TEAM}`, path, query: 'include=events', expect: 200 });
  await session.call({ purpose: 'a team that does not exist is 404', operation: `GET ${TEAM}`, path: { team: Number.MAX_SAFE_INTEGER }, expect: 404 });
  await session.call({ purpose: 'the config, with the ingest key', operation: `GET ${TEAM}/config`, path, credential: 'ingest-key', expect: 200 });
  await session.call({ purpose: 'the config again, unchanged: 304 with no body', operation: `GET ${TEAM}/config`, path, credential: 'ingest-key', headers: { 'if-none-match': '*' }, expect: 304 });
  await session.call({ purpose: 'the config of a team that does not exist is 404', operation: `GET ${TEAM}/config`, path: { team: Number.MAX_SAFE_INTEGER }, credential: 'ingest-key', expect: 404 });
  await session.call({ purpose: 'the config without a credential is 401', operation: `GET ${TEAM}/config`, path, credential: 'none', expect: 401 });
  await session.call({ purpose: 'the config stream, with the ingest key: retry, then the current config (read, then closed)', operation: `GET ${TEAM}/config/stream`, path, credential: 'ingest-key', messages: 1, expect: 200 });
  await session.call({ purpose: 'the config stream of a team that does not exist is 404', operation: `GET ${TEAM}/config/stream`, path: { team: Number.MAX_SAFE_INTEGER }, credential: 'ingest-key', messages: 1, expect: 404 });
  await session.call({ purpose: 'the config stream without a credential is 401', operation: `GET ${TEAM}/config/stream`, path, credential: 'none', messages: 1, expect: 401 });
}

async function events(session: Session, path: { team: number }, event: { team: number; event: string }) {
  await session.call({ purpose: "creates the kit's goal event", operation: `POST ${TEAM}/events`, path, body: { key: event.event, description: 'conformance check' }, expect: 200 });
  await session.call({ purpose: 'a taken key is 409', operation: `POST ${TEAM}/events`, path, body: { key: event.event }, expect: 409 });
  await session.call({ purpose: 'a key with a space is 400', operation: `POST ${TEAM}/events`, path, body: { key: 'not a key' }, expect: 400 });
  await session.call({ purpose: 'an ingest key cannot create events', operation: `POST ${TEAM}/events`, path, body: { key: `${event.event}_x` }, credential: 'ingest-key', expect: 403 });
  await session.call({ purpose: 'the first page of events', operation: `GET ${TEAM}/events`, path, query: 'per_page=2', expect: 200 });
  await session.call({ purpose: 'page 0 is 400', operation: `GET ${TEAM}/events`, path, query: 'page=0', expect: 400 });
  const revenue = `${event.event.slice(0, -'_goal'.length)}_revenue`;
  await session.call({ purpose: "creates the kit's value event, capped", operation: `POST ${TEAM}/events`, path, body: { key: revenue, type: 'value', cap: 500, description: 'conformance check' }, expect: 200 });
  await session.call({ purpose: 'a cap with 7 decimals is 400', operation: `PUT ${EVENT}`, path: { ...path, event: revenue }, body: { cap: 1.0000001 }, expect: 400 });
  await session.call({ purpose: "the kit's event", operation: `GET ${EVENT}`, path: event, expect: 200 });
  await session.call({ purpose: 'an event that does not exist is 404', operation: `GET ${EVENT}`, path: { ...event, event: `${event.event}_none` }, expect: 404 });
  await session.call({ purpose: 'changes its description', operation: `PUT ${EVENT}`, path: event, body: { description: 'conformance check, updated' }, expect: 200 });
  await session.call({ purpose: 'an unknown property is 400', operation: `PUT ${EVENT}`, path: event, body: { colour: 'red' }, expect: 400 });
}

async function experimentLifecycle(
  session: Session,
  path: { team: number },
  event: { team: number; event: string },
  experiment: { team: number; experiment: string },
  participants: string[],
) {
  const variant = (key: string) => ({ ...experiment, variant: key });
  await session.call({ purpose: "creates the kit's experiment, with a minimum effect of 5 %", operation: `POST ${TEAM}/experiments`, path, body: { key: experiment.experiment, event: event.event, minimum_effect: 0.05 }, expect: 200 });
  await session.call({ purpose: 'a minimum effect above 10 is 400', operation: `PUT ${EXPERIMENT}`, path: experiment, body: { minimum_effect: 11 }, expect: 400 });
  await session.call({ purpose: 'the goal of an experiment cannot be deleted: 409', operation: `DELETE ${EVENT}`, path: event, expect: 409 });
  await session.call({ purpose: 'algorithm_type was removed: 400', operation: `POST ${TEAM}/experiments`, path, body: { key: `${experiment.experiment}_x`, event: event.event, algorithm_type: 'ab' }, expect: 400 });
  await session.call({ purpose: 'a goal event that does not exist is 404', operation: `POST ${TEAM}/experiments`, path, body: { key: `${experiment.experiment}_x`, event: `${event.event}_none` }, expect: 404 });
  await session.call({ purpose: 'the experiments, with variants', operation: `GET ${TEAM}/experiments`, path, query: 'include=variants&per_page=2', expect: 200 });
  await session.call({ purpose: 'changes its description', operation: `PUT ${EXPERIMENT}`, path: experiment, body: { description: 'conformance check' }, expect: 200 });
  await session.call({ purpose: 'a goal event that does not exist is 404', operation: `PUT ${EXPERIMENT}`, path: experiment, body: { event: `${event.event}_none` }, expect: 404 });
  const targeted = { conditions: { country: { $in: ['NL', 'DE'] } }, coverage: 12.5, exclusion_group: { key: `${experiment.experiment}_group`, start: 0, end: 50 } };
  await session.call({ purpose: 'targets it: conditions, coverage and an exclusion group', operation: `PUT ${EXPERIMENT}`, path: experiment, body: targeted, expect: 200 });
  await session.call({ purpose: 'a malformed condition is 400', operation: `PUT ${EXPERIMENT}`, path: experiment, body: { conditions: { $and: 'NL' } }, expect: 400 });
  await session.call({ purpose: 'a coverage in thousandths is 400', operation: `PUT ${EXPERIMENT}`, path: experiment, body: { coverage: 12.345 }, expect: 400 });
  await session.call({ purpose: 'an exclusion range that ends before it starts is 400', operation: `PUT ${EXPERIMENT}`, path: experiment, body: { exclusion_group: { key: 'g', start: 60, end: 40 } }, expect: 400 });
  await session.call({ purpose: 'targets everyone again, so that its participants of its own enter', operation: `PUT ${EXPERIMENT}`, path: experiment, body: { conditions: {}, coverage: 100, exclusion_group: null }, expect: 200 });
  await session.call({ purpose: 'adds the control', operation: `POST ${EXPERIMENT}/variants`, path: experiment, body: { key: 'control', control: true }, expect: 200 });
  await session.call({ purpose: 'adds the treatment', operation: `POST ${EXPERIMENT}/variants`, path: experiment, body: { key: 'treatment' }, expect: 200 });
  await session.call({ purpose: 'a taken variant key is 409', operation: `POST ${EXPERIMENT}/variants`, path: experiment, body: { key: 'treatment' }, expect: 409 });
  await session.call({ purpose: 'adds a third variant', operation: `POST ${EXPERIMENT}/variants`, path: experiment, body: { key: 'spare', traffic: 0 }, expect: 200 });
  await session.call({ purpose: 'the variants', operation: `GET ${EXPERIMENT}/variants`, path: experiment, expect: 200 });
  await session.call({ purpose: 'the control', operation: `GET ${VARIANT}`, path: variant('control'), expect: 200 });
  await session.call({ purpose: 'describes the treatment', operation: `PUT ${VARIANT}`, path: variant('treatment'), body: { description: 'the change under test' }, expect: 200 });
  await session.call({ purpose: 'traffic above 100 is 400', operation: `PUT ${VARIANT}`, path: variant('treatment'), body: { traffic: 101 }, expect: 400 });
  await session.call({ purpose: 'removes the third variant', operation: `DELETE ${VARIANT}`, path: variant('spare'), expect: 200 });
  await session.call({ purpose: 'a variant that does not exist is 404', operation: `DELETE ${VARIANT}`, path: variant('spare'), expect: 404 });
  await session.call({ purpose: 'starts it', operation: `POST ${EXPERIMENT}/start`, path: experiment, expect: 200 });
  await session.call({ purpose: 'a running experiment cannot start: 409', operation: `POST ${EXPERIMENT}/start`, path: experiment, expect: 409 });
  await session.call({ purpose: 'with its variants', operation: `GET ${EXPERIMENT}`, path: experiment, query: 'include=variants', expect: 200 });
  await session.call({ purpose: 'a running experiment cannot be deleted: 409', operation: `DELETE ${EXPERIMENT}`, path: experiment, expect: 409 });

  const [first, second] = participants as [string, string];
  const ingest = (body: object, expect: number, purpose: string) =>
    session.call({ purpose, operation: `POST ${TEAM}/ingest`, path, credential: 'ingest-key', body: { experiment: experiment.experiment, ...body }, expect });
  await ingest({ participant: first, event: event.event }, 200, 'enrols a participant of its own in its experiment only and counts its event');
  await ingest({ participant: first, event: `${event.event}_none` }, 404, 'an event that does not exist is 404, and nothing is stored');
  await ingest({ participant: first, variant: 'none' }, 404, 'a variant that does not exist is 404');
  const revenue = `${event.event.slice(0, -'_goal'.length)}_revenue`;
  await ingest({ participant: first, event: revenue, value: 19.99 }, 200, 'counts a value event with its value');
  await ingest({ participant: first, event: revenue, value: 0.1234567 }, 400, 'a value with 7 decimals is 400');
  await ingest({ participant: first, event: revenue }, 409, 'a value event without a value is 409');
  await ingest({ participant: first, event: event.event, value: 1 }, 409, 'a value with a unique event is 409');
  const tracked = { participant: first, event: event.event, enrol: false, idempotency_key: crypto.randomUUID() };
  const once = await ingest(tracked, 200, 'counts an event with enrol: false where the participant is enrolled, under an idempotency key');
  const again = await ingest(tracked, 200, 'the same item again, with its idempotency key: a replay');
  session.expectThat(`POST ${TEAM}/ingest`, 'a replay is answered the data of the first time', JSON.stringify(again?.data) === JSON.stringify(once?.data));
  const items = [
    { participant: first, experiment: experiment.experiment, event: event.event },
    { participant: first, experiment: experiment.experiment, event: `${event.event}_none` },
  ];
  const batch = await session.call({ purpose: 'a batch: the same participant again, and an event that does not exist', operation: `POST ${TEAM}/ingest/batch`, path, credential: 'ingest-key', body: { items }, expect: 200 });
  session.expectThat(`POST ${TEAM}/ingest/batch`, 'each item gets the single ingest\'s status (200, 404)', JSON.stringify(batch?.data?.map((item: { status: number }) => item.status)) === '[200,404]');
  await session.call({ purpose: 'an empty batch is 400', operation: `POST ${TEAM}/ingest/batch`, path, credential: 'ingest-key', body: { items: [] }, expect: 400 });
  const statistics = await session.call({ purpose: "the treatment's statistics", operation: `GET ${VARIANT}/statistics`, path: variant('treatment'), expect: 200 });
  const valueEntry = statistics?.data?.events?.find((entry: { event: string }) => entry.event === revenue);
  session.expectThat(`GET ${VARIANT}/statistics`, "the value event's entry has its means with the planning figure participants_needed", valueEntry?.means !== null && 'participants_needed' in (valueEntry?.means ?? {}));
  const results = await session.call({ purpose: "the experiment's results on its goal and its value event", operation: `GET ${EXPERIMENT}/results`, path: experiment, query: `events=${event.event}&events=${revenue}`, expect: 200 });
  const valueResults = results?.data?.events?.find((entry: { event: string }) => entry.event === revenue);
  session.expectThat(
    `GET ${EXPERIMENT}/results`,
    'the value event is judged on its mean: method states means_effect_size, each variant has means_sequence',
    typeof results?.data?.method?.means_effect_size === 'number' && valueResults?.variants?.every((v: object) => 'means_sequence' in v) === true,
  );
  await session.call({ purpose: 'results with the history of an event that does not exist is 404', operation: `GET ${EXPERIMENT}/results`, path: experiment, query: `history_event=${event.event}_none`, expect: 404 });

  const participant = { ...path, participant: second };
  await session.call({ purpose: 'creates a second participant', operation: `POST ${TEAM}/participants`, path, body: { key: second, notes: 'conformance check' }, expect: 200 });
  await session.call({ purpose: 'a taken key is 409', operation: `POST ${TEAM}/participants`, path, body: { key: second }, expect: 409 });
  await session.call({ purpose: 'the first page of participants', operation: `GET ${TEAM}/participants`, path, query: 'per_page=2', expect: 200 });
  await session.call({ purpose: 'the participant', operation: `GET ${PARTICIPANT}`, path: participant, expect: 200 });
  await session.call({ purpose: 'changes its attributes', operation: `PUT ${PARTICIPANT}`, path: participant, body: { attributes: { plan: 'pro' } }, expect: 200 });
  await session.call({ purpose: 'an unknown participant is 404', operation: `GET ${PARTICIPANT}`, path: { ...path, participant: `${second}-none` }, expect: 404 });
  const enrolled = { ...path, participant: first, experiment: experiment.experiment };
  await session.call({ purpose: "the first participant's experiments", operation: `GET ${PARTICIPANT}/experiments`, path: enrolled, expect: 200 });
  await session.call({ purpose: 'its enrolment in the experiment', operation: `GET ${PARTICIPANT}/experiments/{experiment}`, path: enrolled, expect: 200 });
  await session.call({ purpose: 'unenrols it', operation: `DELETE ${PARTICIPANT}/experiments/{experiment}`, path: enrolled, expect: 200 });
  await session.call({ purpose: 'an enrolment that does not exist is 404', operation: `GET ${PARTICIPANT}/experiments/{experiment}`, path: enrolled, expect: 404 });

  await session.call({ purpose: 'stops it', operation: `POST ${EXPERIMENT}/stop`, path: experiment, expect: 200 });
  await session.call({ purpose: 'a stopped experiment cannot stop: 409', operation: `POST ${EXPERIMENT}/stop`, path: experiment, expect: 409 });
  await ingest({ participant: second }, 409, 'a stopped experiment takes no enrolments: 409');
}

/** `event` and `participant`: the kit's own, for its rollout's guardrail and exposure. */
async function features(session: Session, path: { team: number }, key: string, event: string, participant: string) {
  const feature = { ...path, feature: key };
  await session.call({ purpose: "creates the kit's flag", operation: `POST ${TEAM}/features`, path, body: { key, enabled: false, value: 'conformance' }, expect: 200 });
  await session.call({ purpose: 'a taken key is 409', operation: `POST ${TEAM}/features`, path, body: { key }, expect: 409 });
  await session.call({ purpose: 'the first page of flags', operation: `GET ${TEAM}/features`, path, query: 'per_page=2', expect: 200 });
  await session.call({ purpose: 'the flag', operation: `GET ${FEATURE}`, path: feature, expect: 200 });
  await session.call({ purpose: 'changes its value', operation: `PUT ${FEATURE}`, path: feature, body: { enabled: true, value: '#00aa00' }, expect: 200 });
  await session.call({ purpose: 'a value that is not a string is 400', operation: `PUT ${FEATURE}`, path: feature, body: { value: { colour: 'green' } }, expect: 400 });
  const rules = [
    { type: 'force', conditions: { country: 'DE' }, value: 'german', starts_at: '2000-01-01T00:00:00.000Z', ends_at: null },
    { type: 'rollout', percentage: 100, value: 'rolled out' },
  ];
  await session.call({ purpose: 'gives it a force rule and a rollout', operation: `PUT ${FEATURE}`, path: feature, body: { rules }, expect: 200 });
  await session.call({ purpose: 'a percentage with three decimals is 400', operation: `PUT ${FEATURE}`, path: feature, body: { rules: [{ type: 'rollout', percentage: 1.234, value: 'x' }] }, expect: 400 });
  await session.call({ purpose: 'a rule of an experiment that does not exist is 404', operation: `PUT ${FEATURE}`, path: feature, body: { rules: [{ type: 'experiment', experiment: `${key}_none`, variants: { control: 'x' } }] }, expect: 404 });
  const evaluated = await session.call({ purpose: 'evaluates the flags for a German participant, without enrolling it', operation: `POST ${TEAM}/evaluate`, path, credential: 'ingest-key', body: { participant: `${key}-visitor`, attributes: { country: 'DE' } }, expect: 200 });
  session.expectThat(`POST ${TEAM}/evaluate`, 'the force rule serves the German participant', (evaluated as { data?: { features?: Record<string, { value: string }> } })?.data?.features?.[key]?.value === 'german');
  await session.call({ purpose: 'an evaluation without a participant is 400', operation: `POST ${TEAM}/evaluate`, path, credential: 'ingest-key', body: { enrol: false }, expect: 400 });
  await ofrep(session, path, key);
  await rollouts(session, path, key, event, participant);
  await session.call({ purpose: 'deletes it', operation: `DELETE ${FEATURE}`, path: feature, expect: 200 });
  await session.call({ purpose: 'a flag that does not exist is 404', operation: `GET ${FEATURE}`, path: feature, expect: 404 });
}

/** OFREP's two evaluations on the kit's flag (a German force rule, then a rollout to everyone), with the ingest key as OFREP's X-API-Key too. */
async function ofrep(session: Session, path: { team: number }, key: string) {
  const [one, all] = [`POST ${OFREP}/{feature}`, `POST ${OFREP}`];
  const german = { context: { targetingKey: `${key}-visitor`, country: 'DE' } };
  const served = await session.call({ purpose: 'OFREP: evaluates the flag for a German participant', operation: one, path: { ...path, feature: key }, credential: 'ingest-key', body: german, expect: 200 });
  session.expectThat(one, 'the force rule serves the German participant as TARGETING_MATCH', served?.value === 'german' && served?.reason === 'TARGETING_MATCH');
  const byHeader = await session.call({ purpose: 'OFREP: the ingest key as X-API-Key', operation: one, path: { ...path, feature: key }, credential: 'ingest-key-header', body: { context: { targetingKey: `${key}-visitor` } }, expect: 200 });
  session.expectThat(one, 'the rollout serves everyone else as SPLIT', byHeader?.value === 'rolled out' && byHeader?.reason === 'SPLIT');
  await session.call({ purpose: 'OFREP: a rollout without targetingKey is 400 TARGETING_KEY_MISSING', operation: one, path: { ...path, feature: key }, credential: 'ingest-key', body: { context: { country: 'FR' } }, expect: 400 });
  await session.call({ purpose: 'OFREP: a flag that does not exist is 404 FLAG_NOT_FOUND', operation: one, path: { ...path, feature: `${key}_none` }, credential: 'ingest-key', body: german, expect: 404 });
  await session.call({ purpose: 'OFREP: no credential is 401', operation: one, path: { ...path, feature: key }, credential: 'none', body: german, expect: 401 });
  const flags = await session.call({ purpose: 'OFREP: evaluates every flag', operation: all, path, credential: 'ingest-key', body: german, expect: 200 });
  session.expectThat(all, "the kit's flag is among them", Array.isArray(flags?.flags) && flags.flags.some((flag: { key: string }) => flag.key === key));
  await session.call({ purpose: 'OFREP: an unchanged evaluation is 304 with no body', operation: all, path, credential: 'ingest-key', headers: { 'if-none-match': '*' }, body: german, expect: 304 });
  const stream = `GET ${TEAM}/ofrep/v1/event-stream`;
  const token = /[?&]token=([^&]+)/.exec(flags?.eventStreams?.[0]?.endpoint?.requestUri ?? '')?.[1] ?? '0.' + 'A'.repeat(43);
  await session.call({ purpose: "OFREP: the event stream the evaluation announced, by its URL's token alone: retry, then a notice (read, then closed)", operation: stream, path, query: `token=${token}`, credential: 'none', messages: 1, expect: 200 });
  await session.call({ purpose: 'OFREP: the event stream with a token that is not one of the team is 401', operation: stream, path, query: `token=0.${'A'.repeat(43)}`, credential: 'none', messages: 1, expect: 401 });
  await session.call({ purpose: 'OFREP: a context attribute that is an object is 400 INVALID_CONTEXT', operation: all, path, credential: 'ingest-key', body: { context: { targetingKey: 'x', address: { city: 'Berlin' } } }, expect: 400 });
}

/** The audit log holds the flag's life, newest first: created, updated twice, updated by a rollout's release (refused changes write nothing), deleted. */
async function auditLog(session: Session, path: { team: number }, flag: string) {
  const operation = `GET ${TEAM}/audit-log`;
  const log = await session.call({ purpose: "the audit log of the kit's flag", operation, path, query: `resource_type=flag&resource_key=${flag}&limit=100`, expect: 200 });
  const actions = (log?.data as Array<{ action: string }> | undefined)?.map((entry) => entry.action);
  session.expectThat(operation, "the flag's entries, newest first: deleted, updated three times (the last by a rollout's release), created", JSON.stringify(actions) === JSON.stringify(['deleted', 'updated', 'updated', 'updated', 'created']));
  const page = await session.call({ purpose: 'the first page of two entries', operation, path, query: `resource_key=${flag}&limit=2`, expect: 200 });
  await session.call({ purpose: 'the next page, by its cursor', operation, path, query: `resource_key=${flag}&limit=2&cursor=${page?.meta?.next_cursor ?? '1'}`, expect: 200 });
  await session.call({ purpose: 'a limit above 100 is 400', operation, path, query: 'limit=101', expect: 400 });
  await session.call({ purpose: 'an ingest key cannot read the audit log', operation, path, credential: 'ingest-key', expect: 403 });
}

/**
 * A webhook endpoint of the kit's own, created disabled (nothing is ever sent to it) on a
 * documentation address (TEST-NET-3, public by the service's rules), and deleted again.
 */
async function webhooks(session: Session, path: { team: number }, prefix: string) {
  const WEBHOOKS = `${TEAM}/webhooks`;
  const WEBHOOK = `${WEBHOOKS}/{webhook}`;
  await session.call({ purpose: "the team's webhook endpoints", operation: `GET ${WEBHOOKS}`, path, expect: 200 });
  await session.call({ purpose: 'an ingest key cannot list webhook endpoints', operation: `GET ${WEBHOOKS}`, path, credential: 'ingest-key', expect: 403 });
  const url = `https://203.0.113.7/${prefix}`;
  const key = `${prefix}_hook`;
  await session.call({ purpose: 'an unknown event type is 400', operation: `POST ${WEBHOOKS}`, path, body: { key, url, event_types: ['flag.flipped'] }, expect: 400 });
  const created = await session.call({ purpose: "creates the kit's endpoint, disabled, and sees its secret once", operation: `POST ${WEBHOOKS}`, path, body: { key, url, event_types: ['flag.updated'], enabled: false, description: 'conformance check' }, expect: 200 });
  if (created?.data?.key !== key) return;
  const webhook = { ...path, webhook: key };
  try {
    session.expectThat(`POST ${WEBHOOKS}`, 'the secret is a Standard Webhooks whsec_ secret', /^whsec_/.test(String(created?.data?.secret)));
    const read = await session.call({ purpose: "the kit's endpoint", operation: `GET ${WEBHOOK}`, path: webhook, expect: 200 });
    session.expectThat(`GET ${WEBHOOK}`, 'the secret is never shown again', read?.data !== undefined && !('secret' in read.data));
    await session.call({ purpose: 'an endpoint that does not exist is 404', operation: `GET ${WEBHOOK}`, path: { ...path, webhook: `${prefix}_absent` }, expect: 404 });
    await session.call({ purpose: 'changes its event types', operation: `PUT ${WEBHOOK}`, path: webhook, body: { event_types: ['flag.*', 'experiment.stopped'] }, expect: 200 });
    await session.call({ purpose: 'an empty list of event types is 400', operation: `PUT ${WEBHOOK}`, path: webhook, body: { event_types: [] }, expect: 400 });
    await session.call({ purpose: 'rotates its secret', operation: `POST ${WEBHOOK}/rotate-secret`, path: webhook, expect: 200 });
    await session.call({ purpose: 'its deliveries (none: it is disabled)', operation: `GET ${WEBHOOK}/deliveries`, path: webhook, query: 'limit=10', expect: 200 });
    await session.call({ purpose: 'a delivery that does not exist cannot be redelivered: 404', operation: `POST ${WEBHOOK}/deliveries/{delivery}/redeliver`, path: { ...webhook, delivery: Number.MAX_SAFE_INTEGER }, expect: 404 });
  } finally {
    await session.call({ purpose: "deletes the kit's endpoint", operation: `DELETE ${WEBHOOK}`, path: webhook, expect: 200 });
    await session.call({ purpose: 'the endpoint is gone: 404', operation: `DELETE ${WEBHOOK}`, path: webhook, expect: 404 });
  }
}

/**
 * Deletes what the run created, whatever state it got to: after a complete run each delete is a
 * 200; after a run cut short, a 404 only says that the step never created it.
 */
async function cleanUp(session: Session, path: { team: number }, keys: ReturnType<typeof keysFor>) {
  const experiment = { ...path, experiment: keys.experiment };
  const found = (await session.call({ purpose: 'cleaning up: reads the experiment', operation: `GET ${EXPERIMENT}`, path: experiment, expect: [200, 404] })) as { data?: { status: string } } | undefined;
  if (found?.data?.status === 'running') await session.call({ purpose: 'cleaning up: stops the experiment', operation: `POST ${EXPERIMENT}/stop`, path: experiment, expect: 200 });
  for (const participant of keys.participants) {
    await session.call({ purpose: 'cleaning up: deletes a participant of its own', operation: `DELETE ${PARTICIPANT}`, path: { ...path, participant }, expect: [200, 404] });
  }
  await session.call({ purpose: 'cleaning up: deletes the experiment and its variants', operation: `DELETE ${EXPERIMENT}`, path: experiment, expect: [200, 404] });
  await session.call({ purpose: 'cleaning up: deletes the flag', operation: `DELETE ${FEATURE}`, path: { ...path, feature: keys.feature }, expect: [200, 404] });
  await session.call({ purpose: 'cleaning up: deletes the event', operation: `DELETE ${EVENT}`, path: { ...path, event: keys.event }, expect: [200, 404] });
  await session.call({ purpose: 'the event is gone: 404', operation: `DELETE ${EVENT}`, path: { ...path, event: keys.event }, expect: 404 });
  await session.call({ purpose: 'cleaning up: deletes the value event', operation: `DELETE ${EVENT}`, path: { ...path, event: keys.valueEvent }, expect: [200, 404] });
}
