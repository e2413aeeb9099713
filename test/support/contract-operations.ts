import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The operations of the bundled contract (generated/openapi.json) as tests drive them: an operation added there is tested too. */

type Json = Record<string, unknown>;
interface SpecOperation {
  operationId: string;
  summary: string;
  description?: string;
  'x-role'?: 'viewer' | 'editor' | 'admin';
  security?: Array<Record<string, string[]>>;
  parameters?: Array<Json>;
  requestBody?: Json;
  responses: Record<string, unknown>;
}
interface Spec {
  security: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, SpecOperation>>;
  components: Record<string, Record<string, Json>>;
}

export const spec = JSON.parse(readFileSync(fileURLToPath(new URL('../../generated/openapi.json', import.meta.url)), 'utf8')) as Spec;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Follows a local `#/components/...` reference of the bundled document. */
export function deref<T = Json>(value: Json): T {
  const ref = value.$ref;
  if (typeof ref !== 'string') return value as T;
  const target = ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, part) => (node as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
  return deref<T>(target as Json);
}

export interface ContractOperation {
  method: string;
  template: string;
  operationId: string;
  description: string;
  /** The least role the operation needs (`x-role`), for operations on a team. */
  role?: 'viewer' | 'editor' | 'admin';
  /** Path parameter name → the example the contract gives for it. */
  pathExamples: Record<string, unknown>;
  /** The application/json request example, when the operation takes a body. */
  bodyExample?: unknown;
  documented: Set<number>;
  isPublic: boolean;
  acceptsIngestKey: boolean;
  teamScoped: boolean;
}

export const operations: ContractOperation[] = Object.entries(spec.paths).flatMap(([template, item]) =>
  METHODS.filter((method) => item[method]).map((method) => {
    const op = item[method];
    const parameters = [...((item.parameters as unknown as Json[]) ?? []), ...(op.parameters ?? [])].map((p) => deref<Json>(p));
    const pathExamples = Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, p.example]));
    const body = op.requestBody ? deref<{ content: Record<string, { example?: unknown }> }>(op.requestBody) : undefined;
    const security = op.security ?? spec.security;
    return {
      method: method.toUpperCase(),
      template,
      operationId: op.operationId,
      description: op.description ?? '',
      role: op['x-role'],
      pathExamples,
      bodyExample: body?.content['application/json']?.example,
      documented: new Set(Object.keys(op.responses).map(Number)),
      isPublic: security.some((requirement) => Object.keys(requirement).length === 0),
      acceptsIngestKey: security.some((requirement) => 'ingestKey' in requirement),
      teamScoped: template.includes('{team}'),
    };
  }),
);

/** Every path parameter's example across the contract: event, experiment, variant, feature, participant. */
export const pathExamples = Object.fromEntries(operations.flatMap((op) => Object.entries(op.pathExamples))) as Record<string, string>;

/** The operation's path with the team's id and the contract's examples filled in. */
export function pathOf(op: ContractOperation, teamId: number): string {
  return op.template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(String(name === 'team' ? teamId : op.pathExamples[name])));
}
