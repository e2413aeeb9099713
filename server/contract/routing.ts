import type { RequestHandler, Response } from 'express';
import { parameterOf, type ContractDocument } from './document';
import { MethodNotAllowed, NotFound } from '../http/errors';
import { isMemberRole, type MemberRole } from '../../domain/member-roles';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

export interface KnownOperation {
  operationId: string;
  /** The operation needs no credential (a sent one is still checked). */
  isPublic: boolean;
  acceptsIngestKey: boolean;
  /** The operation also takes the credential in its `token` query parameter (`ofrepStreamToken`), checked by its route. */
  acceptsStreamToken: boolean;
  /** The least role in the team an API token's user needs (the operation's `x-role`); none for operations outside a team. */
  role?: MemberRole;
  takesBody: boolean;
  /** An OFREP operation (`x-ofrep`): its bodies, errors included, are OFREP's (ofrep-failure.ts). */
  ofrep?: 'flag' | 'flags';
  /** Query parameters that take a list and allow it empty (no `minItems`): an empty value is the empty list. */
  listParameters: Set<string>;
  /** Integer query parameters and their bounds. */
  integerParameters: Map<string, { minimum: number; maximum: number }>;
}

interface KnownPath {
  pattern: RegExp;
  operations: Map<string, KnownOperation>;
}

/**
 * Answers what the contract does not have before anything else runs: an unknown path under
 * /api is 404, a method the path lacks (HEAD and OPTIONS included) is 405 with `Allow`.
 */
export function knownOperations(document: ContractDocument): RequestHandler {
  const paths = Object.entries(document.paths).map(([template, item]) => toKnownPath(document, template, item));
  return (req, res, next) => {
    if (!req.path.startsWith('/api/') && req.path !== '/api') return next();
    const path = paths.find((candidate) => candidate.pattern.test(req.path));
    if (!path) throw new NotFound(`There is no operation at ${req.path}.`);
    const operation = path.operations.get(req.method.toLowerCase());
    if (!operation) throw new MethodNotAllowed(req.method, [...path.operations.keys()].map((m) => m.toUpperCase()));
    res.locals.operation = operation;
    next();
  };
}

export function operationOf(res: Response): KnownOperation {
  return res.locals.operation as KnownOperation;
}

function ofrepKind(operationId: string | undefined, kind: unknown): KnownOperation['ofrep'] {
  if (kind === undefined || kind === 'flag' || kind === 'flags') return kind;
  throw new Error(`${operationId}: x-ofrep '${String(kind)}' is not flag or flags`);
}

function toKnownPath(document: ContractDocument, template: string, item: ContractDocument['paths'][string]): KnownPath {
  const pattern = new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]+') + '$');
  const operations = new Map<string, KnownOperation>();
  for (const method of METHODS) {
    const operation = item[method];
    if (!operation) continue;
    const security = operation.security ?? document.security ?? [];
    const query = (operation.parameters ?? []).map((parameter) => parameterOf(document, parameter)).filter((parameter) => parameter.in === 'query');
    const role = operation['x-role'];
    if (role !== undefined && !isMemberRole(role)) throw new Error(`${operation.operationId}: x-role '${role}' is not a role`);
    const typed = (type: string) => query.filter((parameter) => [parameter.schema?.type].flat().includes(type));
    operations.set(method, {
      operationId: operation.operationId ?? `${method} ${template}`,
      isPublic: security.some((requirement) => Object.keys(requirement).length === 0),
      acceptsIngestKey: security.some((requirement) => 'ingestKey' in requirement),
      acceptsStreamToken: security.some((requirement) => 'ofrepStreamToken' in requirement),
      role,
      takesBody: operation.requestBody !== undefined,
      ofrep: ofrepKind(operation.operationId, operation['x-ofrep']),
      listParameters: new Set(typed('array').filter((parameter) => !parameter.schema?.minItems).map((parameter) => parameter.name)),
      integerParameters: new Map(typed('integer').map(({ name, schema }) => [name, { minimum: schema?.minimum ?? 0, maximum: schema?.maximum ?? Number.MAX_SAFE_INTEGER }])),
    });
  }
  return { pattern, operations };
}
