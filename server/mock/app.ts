import express, { type Express } from 'express';
import type { Logger } from 'pino';
import type { Identify } from '../auth/identify';
import { hashCredential, sameHash } from '../auth/credentials';
import { loadContract, parameterOf } from '../contract/document';
import { corsHandler } from '../contract/cors';
import { serveContract } from '../docs/routes';
import { NotFound } from '../http/errors';
import { useContractGate } from '../contract/gate';
import { problemHandler } from '../contract/problem-handler';
import { requestLog } from '../http/request-log';
import { operationOf } from '../contract/routing';
import { teamIdOf } from '../teams/middleware';
import type { TeamRow } from '../teams/store';
import { apiKeyAsBearer } from '../ofrep/credential';
import { documentedAnswer, preferenceOf, withRequestedKeys } from './examples';

export interface MockOptions {
  logger: Logger;
  /** The one team that exists: other team ids answer 404, as the server answers for teams it does not have. */
  team: number;
  /** The API token the mock accepts (a member of `team`). */
  token: string;
  /** The ingest key of `team` the mock accepts. */
  ingestKey: string;
}

/**
 * A mock of the service for clients that have no server yet: the server's own contract gate
 * (routing, authentication, body guards, the validator), so it refuses exactly what the server
 * refuses, then each operation's documented example instead of storage — the 200, or the status
 * and example `Prefer` asks for (`Prefer: code=409`, `Prefer: example=<name>`).
 */
export function createMockApp({ logger, team, token, ingestKey }: MockOptions): Express {
  const contract = loadContract();
  const operations = new Map(
    Object.values(contract.paths).flatMap((item) => Object.values(item ?? {}).map((operation) => [operation!.operationId, operation] as const)),
  );
  const teamRow = { id: team } as TeamRow;
  // Compared as the server compares credentials: by hash, in constant time.
  const [tokenHash, ingestKeyHash] = [hashCredential(token), hashCredential(ingestKey)];
  const identify: Identify = async (credential) => {
    const presented = hashCredential(credential);
    if (sameHash(tokenHash, presented)) return { kind: 'user', userId: 1, readOnly: false };
    if (sameHash(ingestKeyHash, presented)) return { kind: 'ingest-key', team: teamRow };
    return undefined;
  };

  const app = express();
  app.set('case sensitive routing', true);
  app.set('x-powered-by', false);
  app.set('query parser', 'simple');
  app.use(requestLog(logger));
  app.use(corsHandler(contract));
  serveContract(app, { console: false });
  app.use(apiKeyAsBearer);
  useContractGate(app, contract, identify, { validateRequests: true, validateResponses: true });
  app.use('/api/teams/:team', (req, _res, next) => {
    const id = teamIdOf(String(req.params.team));
    if (id !== team) throw new NotFound(`No team ${id}.`);
    next();
  });
  app.use('/api', (req, res) => {
    const operation = operations.get(operationOf(res).operationId)!;
    const documented = documentedAnswer(contract as object, operation, preferenceOf(req.get('prefer')));
    const parameters = (operation.parameters ?? []).map((parameter) => parameterOf(contract, parameter));
    const answer = withRequestedKeys(documented, parameters, (req as { openapi?: { pathParams?: Record<string, string> } }).openapi?.pathParams ?? {});
    res.status(answer.status).set(answer.headers);
    if (answer.mediaType === null) res.end();
    // The config stream's example: its messages, then the end (a client reconnects as it would to the server).
    else if (answer.mediaType === 'text/event-stream') res.type(answer.mediaType).set('Cache-Control', 'no-cache').send(answer.body);
    else res.type(answer.mediaType).json(answer.body);
  });
  app.use((req) => {
    throw new NotFound(`There is nothing at ${req.path}.`);
  });
  app.use(problemHandler(logger));
  return app;
}
