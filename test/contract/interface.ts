// The published interface of the experimentation service, as data: every operation it lists,
// its path parameters, the query parameters and body properties it names, the operations it
// removed and the statuses its error table shows. Transcribed from the interface document and
// reviewed against it; the contract tests hold generated/openapi.json to this table, so a change
// here is a change of the published interface, not of our design.

/** "GET /api/teams/{team}" — the way the interface names an operation. */
export type OperationKey = string;

interface Endpoint {
  method: string;
  path: string;
  key: OperationKey;
  purpose: string;
}

function operation(method: string, path: string, purpose = ''): Endpoint {
  return { method, path, key: `${method} ${path}`, purpose };
}

const TEAM = '/api/teams/{team}';
const EXPERIMENT = `${TEAM}/experiments/{experiment}`;
const VARIANT = `${EXPERIMENT}/variants/{variant}`;
const PARTICIPANT = `${TEAM}/participants/{participant}`;

/** The "Endpoints" table, in its order. */
const endpoints: Endpoint[] = [
  operation('GET', '/api/health', 'Health check'),
  operation('GET', '/api/user', 'Current user'),
  operation('GET', '/api/current-team', 'Current team'),
  operation('GET', '/api/teams', 'List teams'),
  operation('GET', TEAM, 'One team'),
  operation('GET', `${TEAM}/config`, 'Team configuration'),
  operation('GET', `${TEAM}/events`, 'List events'),
  operation('POST', `${TEAM}/events`, 'Create event'),
  operation('GET', `${TEAM}/events/{event}`, 'One event'),
  operation('PUT', `${TEAM}/events/{event}`, 'Update event'),
  operation('DELETE', `${TEAM}/events/{event}`, 'Delete event'),
  operation('GET', `${TEAM}/experiments`, 'List experiments'),
  operation('POST', `${TEAM}/experiments`, 'Create experiment'),
  operation('GET', EXPERIMENT, 'One experiment'),
  operation('PUT', EXPERIMENT, 'Update experiment'),
  operation('DELETE', EXPERIMENT, 'Delete experiment'),
  operation('POST', `${EXPERIMENT}/start`, 'Start experiment'),
  operation('POST', `${EXPERIMENT}/stop`, 'Stop experiment'),
  operation('GET', `${EXPERIMENT}/variants`, 'List variants'),
  operation('POST', `${EXPERIMENT}/variants`, 'Create variant'),
  operation('GET', VARIANT, 'One variant'),
  operation('PUT', VARIANT, 'Update variant'),
  operation('DELETE', VARIANT, 'Delete variant'),
  operation('GET', `${VARIANT}/statistics`, 'Variant statistics'),
  operation('GET', `${TEAM}/features`, 'List features'),
  operation('POST', `${TEAM}/features`, 'Create feature'),
  operation('GET', `${TEAM}/features/{feature}`, 'One feature'),
  operation('PUT', `${TEAM}/features/{feature}`, 'Update feature'),
  operation('DELETE', `${TEAM}/features/{feature}`, 'Delete feature'),
  operation('GET', `${TEAM}/participants`, 'List participants'),
  operation('POST', `${TEAM}/participants`, 'Create participant'),
  operation('GET', PARTICIPANT, 'One participant'),
  operation('PUT', PARTICIPANT, 'Update participant'),
  operation('DELETE', PARTICIPANT, 'Delete participant'),
  operation('GET', `${PARTICIPANT}/experiments`, 'Experiments of a participant'),
  operation('GET', `${PARTICIPANT}/experiments/{experiment}`, 'One experiment of a participant'),
  operation('DELETE', `${PARTICIPANT}/experiments/{experiment}`, 'Remove experiment from a participant'),
  operation('POST', `${TEAM}/ingest`, 'Ingest participant and event data'),
];

export const INTERFACE = {
  endpoints,
  /** "Path parameters are {team}, {event}, {experiment}, {variant}, {feature} and {participant}." */
  pathParameters: ['team', 'event', 'experiment', 'variant', 'feature', 'participant'],
  /** The "Query parameters" table: operation → the parameters it names. */
  queryParameters: new Map<OperationKey, string[]>([
    ['GET /api/teams', ['include', 'per_page', 'page', 'sort']],
    [`GET ${TEAM}`, ['include']],
    [`GET ${TEAM}/events`, ['page']],
    [`GET ${TEAM}/experiments`, ['page']],
    [`GET ${EXPERIMENT}/variants`, ['page']],
    [`GET ${TEAM}/participants`, ['page']],
    [`GET ${PARTICIPANT}`, ['page']],
    [`GET ${PARTICIPANT}/experiments`, ['page']],
  ]),
  /** The "Request bodies named" table: properties that must exist, and `(no x)` ones that must not. */
  requestBodies: [
    { operation: `POST ${TEAM}/ingest`, present: ['participant', 'event'], absent: [] as string[] },
    { operation: `POST ${TEAM}/experiments`, present: [] as string[], absent: ['algorithm_type'] },
  ],
  /** "Removed operations, which must not exist". */
  removedOperations: [
    operation('POST', `${TEAM}/events/{event}/archive`),
    operation('POST', `${TEAM}/events/{event}/restore`),
    operation('POST', `${EXPERIMENT}/archive`),
    operation('POST', `${EXPERIMENT}/restore`),
    operation('POST', `${EXPERIMENT}/enroll`),
    operation('POST', `${VARIANT}/impressions`),
    operation('POST', `${TEAM}/hit`),
  ].map(({ method, path, key }) => ({ method, path, key })),
  /** The "Errors" table: a status and the operations it is listed on ("every other operation" for 200 is not a list). */
  errors: [
    { status: '401', operations: ['GET /api/health'] },
    { status: '402', operations: [`POST ${TEAM}/ingest`] },
    { status: '403', operations: [`GET ${TEAM}/config`] },
    { status: '404', operations: [`GET ${TEAM}/config`, `POST ${TEAM}/ingest`] },
    { status: '500', operations: ['GET /api/health'] },
    { status: '200', operations: ['GET /api/health'] },
  ],
};

/**
 * Operations this service adds beyond the published interface; each is recorded as an addition in
 * CHANGELOG.md. The contract tests hold the document to the interface plus these, and no other.
 */
export const ADDITIONS: Endpoint[] = [
  operation('POST', `${TEAM}/ingest/batch`, 'Ingest a batch'),
  operation('GET', `${TEAM}/experiments/{experiment}/results`, 'Experiment results'),
  operation('POST', `${TEAM}/evaluate`, 'Evaluate flags and experiments for a participant'),
  operation('GET', `${TEAM}/config/stream`, 'Team configuration, streamed'),
  operation('POST', `${TEAM}/ofrep/v1/evaluate/flags/{feature}`, 'Evaluate one flag (OpenFeature OFREP)'),
  operation('POST', `${TEAM}/ofrep/v1/evaluate/flags`, 'Evaluate every flag (OpenFeature OFREP)'),
  operation('GET', `${TEAM}/ofrep/v1/event-stream`, 'Event stream (OpenFeature OFREP)'),
  operation('GET', `${TEAM}/audit-log`, 'Audit log'),
  operation('GET', `${TEAM}/webhooks`, 'List webhook endpoints'),
  operation('POST', `${TEAM}/webhooks`, 'Create webhook endpoint'),
  operation('GET', `${TEAM}/webhooks/{webhook}`, 'One webhook endpoint'),
  operation('PUT', `${TEAM}/webhooks/{webhook}`, 'Update webhook endpoint'),
  operation('DELETE', `${TEAM}/webhooks/{webhook}`, 'Delete webhook endpoint'),
  operation('POST', `${TEAM}/webhooks/{webhook}/rotate-secret`, 'Rotate webhook secret'),
  operation('GET', `${TEAM}/webhooks/{webhook}/deliveries`, 'List deliveries'),
  operation('POST', `${TEAM}/webhooks/{webhook}/deliveries/{delivery}/redeliver`, 'Redeliver'),
  operation('GET', `${TEAM}/features/{feature}/rollouts`, 'List rollouts'),
  operation('POST', `${TEAM}/features/{feature}/rollouts`, 'Create rollout'),
  operation('GET', `${TEAM}/features/{feature}/rollouts/{rollout}`, 'One rollout'),
  operation('POST', `${TEAM}/features/{feature}/rollouts/{rollout}/pause`, 'Pause rollout'),
  operation('POST', `${TEAM}/features/{feature}/rollouts/{rollout}/resume`, 'Resume rollout'),
  operation('POST', `${TEAM}/features/{feature}/rollouts/{rollout}/roll-back`, 'Roll back rollout'),
  operation('POST', `${TEAM}/features/{feature}/rollouts/{rollout}/release`, 'Release rollout'),
];

/** Path parameters of our additions that the published interface does not have. */
export const ADDED_PATH_PARAMETERS = ['webhook', 'delivery', 'rollout'];
