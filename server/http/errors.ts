import type { components } from '../../generated/api';

type FieldError = components['schemas']['ProblemFieldError'];

/** An error that is answered with its HTTP status as an RFC 9457 problem. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly slug: string,
    detail: string,
    readonly errors?: FieldError[],
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export class BadRequest extends HttpError {
  constructor(detail: string, errors: FieldError[] = []) {
    super(400, 'Bad Request', 'validation', detail, errors);
  }
}

export class Unauthorized extends HttpError {
  constructor(detail = 'No valid credential: send Authorization: Bearer <API token or ingest key>.') {
    super(401, 'Unauthorized', 'unauthorized', detail, undefined, { 'WWW-Authenticate': 'Bearer' });
  }
}

export class QuotaExceeded extends HttpError {
  constructor(detail: string) {
    super(402, 'Quota Exceeded', 'quota-exceeded', detail);
  }
}

export class Forbidden extends HttpError {
  constructor(detail: string) {
    super(403, 'Forbidden', 'forbidden', detail);
  }
}

export class NotFound extends HttpError {
  constructor(detail: string) {
    super(404, 'Not Found', 'not-found', detail);
  }
}

export class MethodNotAllowed extends HttpError {
  constructor(method: string, allowed: string[]) {
    super(405, 'Method Not Allowed', 'method-not-allowed', `${method} is not allowed here; allowed: ${allowed.join(', ')}.`, undefined, {
      Allow: allowed.join(', '),
    });
  }
}

export class Conflict extends HttpError {
  constructor(detail: string) {
    super(409, 'Conflict', 'conflict', detail);
  }
}

/** 409 too, with a type of its own: the team holds all it may of something (TEAM_LIMITS). */
export class LimitReached extends HttpError {
  /** `errors`: the fields that would take the team past the limit, when the limit is on a size. */
  constructor(detail: string, errors?: FieldError[]) {
    super(409, 'Conflict', 'limit-reached', detail, errors);
  }
}

export class PayloadTooLarge extends HttpError {
  /** `limit`: the bytes the operation's bodies may have (64 KiB, or 1 MiB for a batch). */
  constructor(limit = 64 * 1024) {
    super(413, 'Content Too Large', 'payload-too-large', limit > 64 * 1024 ? `Request bodies are limited to ${limit / 2 ** 20} MiB here.` : 'Request bodies are limited to 64 KiB.');
  }
}

export class UnsupportedMediaType extends HttpError {
  constructor(detail = 'Send the body as application/json or application/vnd.api+json.') {
    super(415, 'Unsupported Media Type', 'unsupported-media-type', detail);
  }
}

/** The health check's answer when storage does not answer (the health check's own rule: 500, not 503). */
export class StorageUnavailable extends HttpError {
  constructor(detail = 'Storage does not answer.') {
    super(500, 'Internal Server Error', 'storage-unavailable', detail);
  }
}

/** Seconds a client is told to wait (`Retry-After`) when the service cannot take a request now. */
export const RETRY_AFTER_SECONDS = 5;

/**
 * 503: storage does not answer, or this process is shutting down. Nothing of the request was
 * done; the client retries after `Retry-After` seconds.
 */
export class ServiceUnavailable extends HttpError {
  constructor(detail = 'Storage does not answer; retry shortly.', retryAfterSeconds = RETRY_AFTER_SECONDS) {
    super(503, 'Service Unavailable', 'unavailable', detail, undefined, { 'Retry-After': String(retryAfterSeconds) });
  }
}
