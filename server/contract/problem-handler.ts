import type { ErrorRequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { NoResultError } from 'kysely';
import { isStorageUnavailable } from '../storage/unavailable';
import { BadRequest, Conflict, HttpError, NotFound, PayloadTooLarge, ServiceUnavailable, StorageUnavailable, UnsupportedMediaType } from '../http/errors';
import { sendProblem } from '../http/problem';
import { loggedRequestOf } from '../http/request-log';
import type { KnownOperation } from './routing';
import { ofrepFailure } from './ofrep-failure';

/** The one error middleware: every failure leaves as a problem body; unexpected ones are logged with their request. */
export function problemHandler(logger: Logger): ErrorRequestHandler {
  return (error, req, res, _next) => {
    const known = toHttpError(error) ?? fromIntegrity(error, req.method) ?? fromStorage(error, res);
    if (!known) logger.error({ err: error, req: loggedRequestOf(res) }, 'unhandled error');
    else if (known.status >= 500) logger.warn({ err: error, req: loggedRequestOf(res) }, 'storage unavailable');
    if (res.headersSent) return res.destroy();
    const failure = known ?? new HttpError(500, 'Internal Server Error', 'internal', 'Something went wrong on our side.');
    const ofrep = ofrepFailure(failure, res.locals.operation as KnownOperation | undefined, req);
    if (ofrep) res.status(failure.status).set(failure.headers).json(ofrep);
    else sendProblem(res, failure);
  };
}

/**
 * Storage that does not answer (database gone, connections terminated, SQLite locked or failing
 * to read or write): 503 with Retry-After on every operation — nothing was done, the request can
 * be retried — except the health check, whose rule is 500 (a monitor must see it fail).
 */
function fromStorage(error: unknown, res: Response): HttpError | undefined {
  if (!isStorageUnavailable(error)) return undefined;
  const operation = res.locals.operation as KnownOperation | undefined;
  return operation?.operationId === 'health_get' ? new StorageUnavailable() : new ServiceUnavailable();
}

/**
 * A foreign key the database refused: a concurrent request removed a row this one had looked up
 * (an ingest's event, an experiment's goal) before this one wrote its reference — 404, as if it
 * had not been there; or (a delete) added a reference to the row being deleted — 409. Nothing of
 * the request is stored: its transaction rolled back.
 */
function fromIntegrity(error: unknown, method: string): HttpError | undefined {
  const code = (error as { code?: string } | null)?.code;
  if (code !== '23503' && code !== 'SQLITE_CONSTRAINT_FOREIGNKEY') return undefined;
  if (method === 'DELETE') return new Conflict('It became used by another resource while this request ran; nothing was deleted.');
  return new NotFound('Something the request names was removed while it ran; nothing was stored.');
}

function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  // A row read earlier in the request was deleted by a concurrent one before this request wrote it.
  if (error instanceof NoResultError) return new NotFound('The resource was removed while this request ran.');
  if (typeof error !== 'object' || error === null) return undefined;
  const failure = error as { type?: string; status?: number; expose?: boolean; message?: string; errors?: ValidatorError[] };
  // express.json()'s errors
  if (failure.type === 'entity.parse.failed') return new BadRequest('The body is not valid JSON.', [{ path: '/body', message: 'invalid JSON' }]);
  if (failure.type === 'entity.too.large') return new PayloadTooLarge((failure as { limit?: number }).limit);
  if (failure.type === 'encoding.unsupported' || failure.type === 'charset.unsupported') return new UnsupportedMediaType();
  // express-openapi-validator's errors
  if (Array.isArray(failure.errors) && typeof failure.status === 'number') return fromValidator(failure.status, failure.errors);
  // express.json()'s other client errors: a body that does not decode as its Content-Encoding
  // says (zlib errors carry no `type`), a Content-Length that does not match, an aborted upload.
  if (failure.status === 400 && failure.expose === true) {
    return new BadRequest('The body could not be read.', [{ path: '/body', message: failure.message ?? 'unreadable body' }]);
  }
  return undefined;
}

interface ValidatorError {
  path: string;
  message: string;
}

function fromValidator(status: number, errors: ValidatorError[]): HttpError | undefined {
  const fields = errors.map((e) => ({ path: toFieldPath(e.path), message: e.message }));
  const summary = fields.map((f) => `${f.path} ${f.message}`).join('; ');
  if (status === 400) return new BadRequest(summary || 'The request is invalid.', fields);
  if (status === 415) return new UnsupportedMediaType();
  if (status === 413) return new PayloadTooLarge();
  return undefined;
}

// '.body.key' / '/body/key' → '/body/key'; '.params.team' → '/path/team'
function toFieldPath(path: string): string {
  const [where, ...rest] = path.replace(/^[./]/, '').split(/[./]/).filter(Boolean);
  return '/' + [where === 'params' ? 'path' : where, ...rest].join('/');
}
