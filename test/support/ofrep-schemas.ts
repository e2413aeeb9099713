// OFREP 0.3.0's answer shapes (open-feature/protocol, service/openapi.yaml), written here as JSON
// Schema from the document's descriptions — not copied — to check what the service answers
// against the standard rather than against its own contract. The document's `oneOf` over the
// typed values overlaps (an integer is also a float, the code default matches any object), so
// it is read as `anyOf`, as the document's intent is.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

const metadata = { type: 'object', additionalProperties: { anyOf: [{ type: 'boolean' }, { type: 'string' }, { type: 'number' }] } };
const key = { type: 'string' };
const errorDetails = { type: 'string' };
const typedValues = [
  { type: 'object', required: ['value'], properties: { value: { type: 'boolean' } } },
  { type: 'object', required: ['value'], properties: { value: { type: 'string' } } },
  { type: 'object', required: ['value'], properties: { value: { type: 'integer' } } },
  { type: 'object', required: ['value'], properties: { value: { type: 'number' } } },
  { type: 'object', required: ['value'], properties: { value: { type: 'object' } } },
  // The code default: no `value` at all.
  { type: 'object', not: { required: ['value'] } },
];

const evaluationSuccess = {
  type: 'object',
  required: ['key', 'reason'],
  properties: {
    key,
    reason: { type: 'string', enum: ['STATIC', 'TARGETING_MATCH', 'SPLIT', 'DISABLED', 'UNKNOWN'] },
    variant: { type: 'string' },
    metadata,
  },
  anyOf: typedValues,
};
const evaluationFailure = {
  type: 'object',
  required: ['key', 'errorCode'],
  properties: { key, errorCode: { type: 'string', enum: ['PARSE_ERROR', 'TARGETING_KEY_MISSING', 'INVALID_CONTEXT', 'GENERAL'] }, errorDetails, metadata },
};
const flagNotFound = {
  type: 'object',
  required: ['key', 'errorCode'],
  properties: { key, errorCode: { type: 'string', enum: ['FLAG_NOT_FOUND'] }, errorDetails, metadata },
};
const eventStream = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string' },
    url: { type: 'string', format: 'uri' },
    endpoint: { type: 'object', required: ['requestUri'], properties: { origin: { type: 'string' }, requestUri: { type: 'string', pattern: '^/' } } },
    inactivityDelaySec: { type: 'integer', minimum: 1 },
  },
  oneOf: [
    { required: ['url'], not: { required: ['endpoint'] } },
    { required: ['endpoint'], not: { required: ['url'] } },
  ],
};
const bulkEvaluationSuccess = {
  type: 'object',
  required: ['flags'],
  properties: {
    flags: { type: 'array', items: { anyOf: [evaluationSuccess, evaluationFailure] } },
    metadata,
    eventStreams: { type: 'array', items: eventStream },
  },
};
const bulkEvaluationFailure = { type: 'object', required: ['errorCode'], properties: { errorCode: { type: 'string' }, errorDetails } };

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
export const ofrepSchemas: Record<'evaluationSuccess' | 'evaluationFailure' | 'flagNotFound' | 'bulkEvaluationSuccess' | 'bulkEvaluationFailure', ValidateFunction> = {
  evaluationSuccess: ajv.compile(evaluationSuccess),
  evaluationFailure: ajv.compile(evaluationFailure),
  flagNotFound: ajv.compile(flagNotFound),
  bulkEvaluationSuccess: ajv.compile(bulkEvaluationSuccess),
  bulkEvaluationFailure: ajv.compile(bulkEvaluationFailure),
};

/** The errors of `body` against the named OFREP shape ([] when it validates). */
export function ofrepErrors(shape: keyof typeof ofrepSchemas, body: unknown): string[] {
  const validate = ofrepSchemas[shape];
  return validate(body) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}
