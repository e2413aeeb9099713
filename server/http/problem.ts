import type { ErrorRequestHandler, Response } from 'express';
import { NoResultError } from 'kysely';
import type { components } from '../../generated/api';
import { BadRequest, HttpError, NotFound, PayloadTooLarge, UnsupportedMediaType } from './errors';

type Problem = components['schemas']['Problem'];

export function sendProblem(res: Response, error: HttpError): void {
  const body: Problem = {
    type: `urn:experimentation:problem:${error.slug}`,
    title: error.title,
    status: error.status,
    detail: error.message,
  };
  if (error.status === 400) body.errors = error.errors ?? [];
  res.status(error.status).set(error.headers).type('application/problem+json').json(body);
}

/** The one error middleware: every failure leaves as a problem body. */
export const problemHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const known = toHttpError(error);
  if (!known) req.log?.error({ err: error }, 'unhandled error');
  if (res.headersSent) return res.destroy();
  sendProblem(res, known ?? new HttpError(500, 'Internal Server Error', 'internal', 'Something went wrong on our side.'));
};

function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  // A row read earlier in the request was deleted by a concurrent one before this request wrote it.
  if (error instanceof NoResultError) return new NotFound('The resource was removed while this request ran.');
  if (typeof error !== 'object' || error === null) return undefined;
  const failure = error as { type?: string; status?: number; expose?: boolean; message?: string; errors?: ValidatorError[] };
  // express.json()'s errors
  if (failure.type === 'entity.parse.failed') return new BadRequest('The body is not valid JSON.', [{ path: '/body', message: 'invalid JSON' }]);
  if (failure.type === 'entity.too.large') return new PayloadTooLarge();
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
