/**
 * OFREP's error bodies, the contract's exception for the `x-ofrep` operations: their 400, 404 and
 * 500 answer `{key, errorCode, errorDetails}` (the bulk one without `key`, and its 404 stays a
 * problem) instead of problem details; every other status is answered as everywhere.
 */
import type { Request } from 'express';
import type { components } from '../../generated/api';
import type { KnownOperation } from './routing';
import { HttpError } from '../http/errors';

type ErrorCode = components['schemas']['OfrepEvaluationFailure']['errorCode'] | 'FLAG_NOT_FOUND';

/** An error whose OFREP code is known where it is thrown. */
export class OfrepError extends HttpError {
  constructor(
    status: 400 | 404,
    readonly code: ErrorCode,
    detail: string,
  ) {
    super(status, status === 404 ? 'Not Found' : 'Bad Request', status === 404 ? 'not-found' : 'validation', detail);
  }
}

export class FlagNotFound extends OfrepError {
  constructor(team: number, key: string) {
    super(404, 'FLAG_NOT_FOUND', `Team ${team} has no flag '${key}'.`);
  }
}

/** The OFREP body for an error of an `x-ofrep` operation, or undefined where a problem answers. */
export function ofrepFailure(error: HttpError, operation: KnownOperation | undefined, req: Request): object | undefined {
  const kind = operation?.ofrep;
  if (kind === undefined || ![400, 404, 500].includes(error.status) || (kind === 'flags' && error.status === 404)) return undefined;
  const body = { errorCode: codeOf(error), errorDetails: clip(error.message) };
  // The key as sent, made fit for the answer's schema (no NUL, 1–255 characters).
  return kind === 'flag' ? { key: clip(flagKeyOf(req.path), 255) || '-', ...body } : body;
}

function codeOf(error: HttpError): ErrorCode {
  if (error instanceof OfrepError) return error.code;
  if (error.status === 404) return 'FLAG_NOT_FOUND';
  if (error.status === 500) return 'GENERAL';
  const paths = (error.errors ?? []).map((field) => field.path);
  // The body as a whole could not be read (not JSON, not UTF-8, empty, not an object).
  if (paths.length > 0 && paths.every((path) => path === '/body')) return 'PARSE_ERROR';
  return paths.some((path) => path.startsWith('/path/') || path.startsWith('/query/')) ? 'GENERAL' : 'INVALID_CONTEXT';
}

/** The `{feature}` of `…/ofrep/v1/evaluate/flags/{feature}`, as sent. */
function flagKeyOf(path: string): string {
  const segment = path.slice(path.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function clip(text: string, max = 2000): string {
  const wellFormed = text.toWellFormed().replaceAll('\0', '');
  return [...wellFormed].length <= max ? wellFormed : [...wellFormed].slice(0, max - 1).join('') + '…';
}
