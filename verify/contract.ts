// The bundled contract as the conformance kit reads it: for an answer of an operation, what
// breaks what the document says of its status, media type, headers and body.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Node = { [key: string]: any };

export const contract: Node = JSON.parse(readFileSync(new URL('../generated/openapi.json', import.meta.url), 'utf8'));

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(contract, 'contract');
const validators = new Map<string, ValidateFunction>();

function validatorAt(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.compile({ $ref: `contract#${pointer.slice(1).split('/').map(encodeURIComponent).join('/')}` });
    validators.set(pointer, validate);
  }
  return validate;
}

/** Follows `$ref`s to the node they name, keeping its pointer. */
function deref(node: Node, pointer: string): { node: Node; pointer: string } {
  while (typeof node.$ref === 'string') {
    pointer = node.$ref;
    node = pointer.slice(2).split('/').reduce<Node>((at, segment) => at[segment.replace(/~1/g, '/').replace(/~0/g, '~')], contract);
  }
  return { node, pointer };
}

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

export interface Operation {
  operationId: string;
  method: string;
  path: string;
  /** `POST /api/teams/{team}/events` */
  label: string;
}

export const operations: Operation[] = Object.entries<Node>(contract.paths).flatMap(([path, item]) =>
  ['get', 'put', 'post', 'delete', 'patch'].filter((method) => item[method]).map((method) => ({
    operationId: item[method].operationId as string,
    method: method.toUpperCase(),
    path,
    label: `${method.toUpperCase()} ${path}`,
  })),
);

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

function describe(error: ErrorObject): string {
  const where = error.instancePath || '/';
  if (error.keyword === 'required') return `${where === '/' ? '' : where}/${(error.params as { missingProperty: string }).missingProperty} is missing (required)`;
  if (error.keyword === 'additionalProperties' || error.keyword === 'unevaluatedProperties') {
    const extra = (error.params as { additionalProperty?: string; unevaluatedProperty?: string });
    return `${where === '/' ? '' : where}/${extra.additionalProperty ?? extra.unevaluatedProperty} is not in the contract`;
  }
  return `${where} ${error.message}`;
}

/** What of an answer breaks the contract of `operation`: each item names the status, header or body field. */
export function violations(operation: Operation, answer: Answer): string[] {
  const opPointer = `#/paths/${escape(operation.path)}/${operation.method.toLowerCase()}`;
  const raw = contract.paths[operation.path][operation.method.toLowerCase()].responses[String(answer.status)];
  if (!raw) return [`status ${answer.status} is not documented`];
  const { node: response, pointer } = deref(raw, `${opPointer}/responses/${answer.status}`);
  const found: string[] = [];
  for (const [name, rawHeader] of Object.entries<Node>(response.headers ?? {})) {
    const { node: header, pointer: headerPointer } = deref(rawHeader, `${pointer}/headers/${escape(name)}`);
    const value = answer.headers.get(name);
    if (value === null) {
      if (header.required) found.push(`header ${name} is missing (required)`);
      continue;
    }
    const typed = header.schema?.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
    if (!validatorAt(`${headerPointer}/schema`)(typed)) found.push(`header ${name}: '${value}' breaks its schema`);
  }
  const media = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (!response.content) return found;
  if (!(media in response.content)) return [...found, `media type '${media}' is not documented for ${answer.status}`];
  let body: unknown = answer.text;
  if (media === EVENT_STREAM) found.push(...(operation.path.endsWith('/ofrep/v1/event-stream') ? noticeViolations(answer.text) : eventStreamViolations(answer.text)));
  else {
    try {
      body = JSON.parse(answer.text);
    } catch {
      return [...found, 'the body is not JSON'];
    }
  }
  const validate = validatorAt(`${pointer}/content/${escape(media)}/schema`);
  // A stream's schema is each message's: the stream itself never ends.
  for (const each of media === EVENT_STREAM ? answer.text.split(/(?<=\n\n)/) : [body]) {
    if (!validate(each)) found.push(...(validate.errors ?? []).map((error) => `body ${describe(error)}`));
  }
  return found;
}

export const EVENT_STREAM = 'text/event-stream';

/** The messages of a Server-Sent Events text, up to its last blank line: each one's fields, and comments left out. */
export function eventsOf(text: string): Array<Record<string, string>> {
  const complete = text.slice(0, text.lastIndexOf('\n\n') + 1);
  return complete
    .split('\n\n')
    .map((block) => block.split('\n').filter((line) => line !== '' && !line.startsWith(':')))
    .filter((lines) => lines.length > 0)
    .map((lines) => Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).replace(/^ /, '')])));
}

/**
 * What breaks the OFREP event stream's description in the messages read: `retry` first, then
 * notices `event: message` whose `id` is a config ETag and whose `data` is
 * `{"type":"refetchEvaluation","etag":<the same ETag>}`.
 */
function noticeViolations(text: string): string[] {
  const [first, ...messages] = eventsOf(text);
  const found: string[] = [];
  if (first?.retry === undefined) found.push('the stream does not start with retry');
  const etag = validatorAt('#/components/headers/ETag/schema');
  for (const [index, message] of messages.entries()) {
    if (message.event !== 'message') found.push(`notice ${index + 1}: event is '${message.event}', not 'message'`);
    if (!etag(message.id)) found.push(`notice ${index + 1}: id '${message.id}' is not a config ETag`);
    if (message.data !== JSON.stringify({ type: 'refetchEvaluation', etag: message.id })) found.push(`notice ${index + 1}: data is not {"type":"refetchEvaluation","etag":<its id>}`);
  }
  return found;
}

/**
 * What breaks the config stream's description in the messages read: `retry` first, then
 * `config` messages whose `id` is a config ETag and whose `data` is the body GET …/config answers.
 */
function eventStreamViolations(text: string): string[] {
  const [first, ...messages] = eventsOf(text);
  const found: string[] = [];
  if (first?.retry === undefined) found.push('the stream does not start with retry');
  const configBody = validatorAt('#/components/responses/Config/content/application~1json/schema');
  const etag = validatorAt('#/components/headers/ETag/schema');
  for (const [index, message] of messages.entries()) {
    if (message.event !== 'config') found.push(`message ${index + 1}: event is '${message.event}', not 'config'`);
    if (!etag(message.id)) found.push(`message ${index + 1}: id '${message.id}' is not a config ETag`);
    let data: unknown;
    try {
      data = JSON.parse(message.data ?? '');
    } catch {
      found.push(`message ${index + 1}: data is not JSON`);
      continue;
    }
    if (!configBody(data)) found.push(...(configBody.errors ?? []).map((error) => `message ${index + 1}: data ${describe(error)}`));
  }
  return found;
}
