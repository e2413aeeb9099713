import { BadRequest } from '../http/errors';

/** A JSON node of the bundled document, read loosely. */
type Node = { [key: string]: any };

export interface MockAnswer {
  status: number;
  /** null: the answer has no body (the config's 304). */
  mediaType: string | null;
  body: unknown;
  headers: Record<string, string>;
}

/** What `Prefer` asks of the mock, as Prism reads it: `code=409`, `example=<name>`, or both (`code=409, example=taken`). */
export interface Preference {
  code?: string;
  example?: string;
}

export function preferenceOf(header: string | undefined): Preference {
  const preference: Preference = {};
  for (const part of (header ?? '').split(/[,;]/)) {
    const [name, value] = part.split('=', 2).map((text) => text.trim());
    if (!name || value === undefined) continue;
    if (name.toLowerCase() === 'code') preference.code = value.replace(/^"|"$/g, '');
    if (name.toLowerCase() === 'example') preference.example = value.replace(/^"|"$/g, '');
  }
  return preference;
}

/** Follows an internal `$ref` to what it names. */
function deref(document: Node, node: Node): Node {
  let current = node;
  while (typeof current?.$ref === 'string') {
    current = (current.$ref as string)
      .slice(2)
      .split('/')
      .reduce<Node>((at, segment) => at?.[segment.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  }
  return current;
}

/**
 * The documented answer of `operation` for what the request prefers: the 200 (or the status asked
 * for) with its example — the named one if asked for, else the first — and the example values of
 * its documented headers. A status or example the operation does not document is a 400.
 */
export function documentedAnswer(document: Node, operation: Node, preference: Preference): MockAnswer {
  const responses = operation.responses as Node;
  const code = preference.code ?? '200';
  // Own properties only: `constructor`, `__proto__` or `toString` is no status the operation documents.
  if (!Object.hasOwn(responses, code)) {
    const documented = Object.keys(responses).join(', ');
    throw new BadRequest(`Prefer: code=${code} is not documented for ${operation.operationId}; it documents ${documented}.`, [
      { path: '/header/prefer', message: `code must be one of ${documented}` },
    ]);
  }
  const response = deref(document, responses[code]);
  const [mediaType, content] = Object.entries<Node>(response.content ?? {})[0] ?? [null, {}];
  const examples = Object.entries<Node>(content.examples ?? {}).map(([name, example]) => [name, deref(document, example).value] as const);
  let body: unknown = content.example ?? examples[0]?.[1];
  if (preference.example !== undefined) {
    const named = examples.find(([name]) => name === preference.example);
    if (!named) {
      const names = examples.map(([name]) => name).join(', ') || 'none';
      throw new BadRequest(`Prefer: example=${preference.example} is not an example of the ${code} answer of ${operation.operationId}; its examples: ${names}.`, [
        { path: '/header/prefer', message: `example must be one of: ${names}` },
      ]);
    }
    body = named[1];
  }
  const headers: Record<string, string> = {};
  for (const [name, header] of Object.entries<Node>(response.headers ?? {})) {
    const example = deref(document, header).example ?? deref(document, header).schema?.examples?.[0];
    if (example !== undefined && name.toLowerCase() !== 'access-control-allow-origin') headers[name] = String(example);
  }
  return { status: Number(code), mediaType, body, headers };
}

/**
 * The answer's `detail` speaking of what the request named: a problem example names its path
 * parameters' example values (`No experiment 'checkout_button' in team 1.`); a request for
 * `/experiments/x` reads `No experiment 'x' in team 1.`
 */
export function withRequestedKeys(answer: MockAnswer, parameters: Node[], requested: Record<string, string | undefined>): MockAnswer {
  const body = answer.body as Node | undefined;
  if (typeof body?.detail !== 'string') return answer;
  let detail: string = body.detail;
  for (const parameter of parameters) {
    const value = requested[parameter.name];
    if (parameter.in !== 'path' || parameter.example === undefined || value === undefined) continue;
    const example = String(parameter.example);
    detail = parameter.name === 'team' ? detail.replace(new RegExp(`\\bteam ${example}\\b`, 'g'), `team ${value}`) : detail.replaceAll(`'${example}'`, `'${value}'`);
  }
  return { ...answer, body: { ...body, detail } };
}
