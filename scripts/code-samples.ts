// Code samples for every operation of the bundled document (`x-codeSamples`, which the docs
// render beside each operation): curl, and TypeScript with the consumer package. They are made
// from the operation itself — its path, the examples of its path parameters and of its body, and
// the credential it takes — so they are never written by hand and never go stale. What differs
// from reader to reader comes from the environment, as the quickstart sets it: the server's
// address (BASE_URL), the team (TEAM) and the credential (TOKEN or INGEST_KEY).

type Node = { [key: string]: any };

/** The environment variables a sample reads, named in the description's Clients section. */
export const SAMPLE_ENVIRONMENT = { baseUrl: 'BASE_URL', team: 'TEAM' } as const;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function deref(document: Node, node: Node): Node {
  let current = node;
  while (typeof current?.$ref === 'string') current = (current.$ref as string).slice(2).split('/').reduce<Node>((at, key) => at[key], document);
  return current;
}

interface Request {
  method: string;
  template: string;
  /** Path parameter → its example. */
  path: Record<string, string | number>;
  body?: unknown;
  /** The environment variable holding the credential the sample sends, if any. */
  credential?: 'TOKEN' | 'INGEST_KEY';
  /** Its 200 is a stream of Server-Sent Events (the config stream): read as it comes, never to its end. */
  stream: boolean;
  /** An OFREP operation (`x-ofrep`): OFREP's bodies, without `data`, and its own error bodies. */
  ofrep: boolean;
}

function requestOf(document: Node, template: string, method: string, operation: Node): Request {
  const parameters = (operation.parameters ?? []).map((parameter: Node) => deref(document, parameter));
  const path = Object.fromEntries(parameters.filter((p: Node) => p.in === 'path').map((p: Node) => [p.name, p.example]));
  const body = operation.requestBody ? deref(document, operation.requestBody).content['application/json'].example : undefined;
  const security: Node[] = operation.security ?? document.security ?? [];
  const first = security.find((requirement) => Object.keys(requirement).length > 0);
  // The public health check is shown without a credential; ingest with the ingest key SDKs use.
  const isPublic = security.some((requirement) => Object.keys(requirement).length === 0);
  const credential = isPublic ? undefined : first && 'ingestKey' in first ? 'INGEST_KEY' : 'TOKEN';
  const stream = 'text/event-stream' in (deref(document, operation.responses?.['200'] ?? {}).content ?? {});
  return { method: method.toUpperCase(), template, path, body, credential, stream, ofrep: operation['x-ofrep'] !== undefined };
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The path with its examples, the team as the shell variable: safe in double quotes (encodeURIComponent leaves no `$`, `` ` `` or `"`). */
function curl(request: Request): string {
  const path = request.template.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'team' ? `$${SAMPLE_ENVIRONMENT.team}` : encodeURIComponent(String(request.path[name]))));
  // -N: print each message as it arrives instead of buffering.
  const lines = [`curl ${request.stream ? '-N ' : ''}-X ${request.method} "$${SAMPLE_ENVIRONMENT.baseUrl}${path}"`];
  if (request.credential) lines.push(`-H "Authorization: Bearer $${request.credential}"`);
  if (request.body !== undefined) lines.push(`-H 'Content-Type: application/json'`, `-d ${shellQuote(JSON.stringify(request.body))}`);
  return lines.join(' \\\n  ');
}

/** A JavaScript literal of a JSON value, as a person would write it (unquoted names where they can be). */
function literal(value: unknown, indent: string): string {
  if (Array.isArray(value)) return `[${value.map((item) => literal(item, indent)).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const inner = `${indent}  `;
    const entries = Object.entries(value).map(([key, item]) => `${inner}${/^[A-Za-z_$][\w$]*$/.test(key) ? key : shellQuote(key)}: ${literal(item, inner)}`);
    return entries.length === 0 ? '{}' : `{\n${entries.join(',\n')},\n${indent}}`;
  }
  return typeof value === 'string' ? shellQuote(value) : JSON.stringify(value);
}

function typescript(request: Request): string {
  const init: string[] = [];
  if (Object.keys(request.path).length > 0) {
    const path = Object.entries(request.path).map(([name, example]) => `${name}: ${name === 'team' ? `Number(process.env.${SAMPLE_ENVIRONMENT.team})` : literal(example, '')}`);
    init.push(`  params: { path: { ${path.join(', ')} } },`);
  }
  if (request.body !== undefined) init.push(`  body: ${literal(request.body, '  ')},`);
  const credential = request.credential ? `, process.env.${request.credential}` : '';
  if (request.stream) init.push(`  parseAs: 'stream',`);
  const call = init.length > 0 ? `api.${request.method}('${request.template}', {\n${init.join('\n')}\n})` : `api.${request.method}('${request.template}')`;
  if (request.stream) return streamSample(credential, call);
  return [
    "import { createApiClient } from 'experimentation-api';",
    '',
    `const api = createApiClient(process.env.${SAMPLE_ENVIRONMENT.baseUrl}!${credential});`,
    `const { data, error } = await ${call};`,
    ...(request.ofrep
      ? ['// OFREP\'s own bodies: the evaluation itself, or an error with errorCode (400, 404, 500) or a problem.', 'if (error) throw new Error(JSON.stringify(error));', 'console.log(data);']
      : ['if (error) throw new Error(`${error.status} ${error.detail}`);', 'console.log(data.data);']),
  ].join('\n');
}

/** A stream read message by message: each `data` line is a body such as GET …/config answers. */
function streamSample(credential: string, call: string): string {
  return [
    "import { createApiClient } from 'experimentation-api';",
    '',
    `const api = createApiClient(process.env.${SAMPLE_ENVIRONMENT.baseUrl}!${credential});`,
    `const { response, error } = await ${call};`,
    'if (error) throw new Error(`${error.status} ${error.detail}`);',
    '// Messages end with a blank line; each has `event: config`, `id: <ETag>` and `data: <JSON>`.',
    'const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();',
    "let text = '';",
    'for (;;) {',
    '  const { done, value } = await reader.read();',
    '  if (done) break;',
    '  text += value;',
    "  for (let end = text.indexOf('\\n\\n'); end >= 0; end = text.indexOf('\\n\\n')) {",
    "    const data = text.slice(0, end).split('\\n').find((line) => line.startsWith('data: '));",
    '    text = text.slice(end + 2);',
    '    if (data) console.log(JSON.parse(data.slice(6)).data);',
    '  }',
    '}',
  ].join('\n');
}

/** The document with `x-codeSamples` (curl, TypeScript) on every operation. */
export function withCodeSamples(document: Node): Node {
  for (const [template, item] of Object.entries<Node>(document.paths)) {
    for (const method of METHODS.filter((m) => item[m])) {
      const request = requestOf(document, template, method, item[method]);
      item[method]['x-codeSamples'] = [
        { lang: 'Shell', label: 'curl', source: curl(request) },
        { lang: 'TypeScript', label: 'TypeScript (experimentation-api)', source: typescript(request) },
      ];
    }
  }
  return document;
}
