import type { ServerResponse } from 'node:http';
import type { Response } from 'express';
import type { components } from '../../generated/api';
import type { HttpError } from './errors';

type Problem = components['schemas']['Problem'];

// A detail or field error may quote what the client sent (a 1 000-character parameter name):
// cut to the Problem schema's bounds so that the answer stays within its own contract.
export function problemBody(error: HttpError): Problem {
  const body: Problem = {
    type: `urn:experimentation:problem:${error.slug}`,
    title: error.title,
    status: error.status,
    detail: clip(error.message, 2000),
  };
  // Every 400 names its fields (none, if need be); other problems only when they have some to name.
  if (error.status === 400 || error.errors?.length) {
    body.errors = (error.errors ?? []).slice(0, 100).map((field) => ({ path: clip(field.path, 1000), message: clip(field.message, 1000) }));
  }
  return body;
}

function clip(text: string, max: number): string {
  return [...text].length <= max ? text : [...text].slice(0, max - 1).join('') + '…';
}

export function sendProblem(res: Response, error: HttpError): void {
  res.status(error.status).set(error.headers).type('application/problem+json').json(problemBody(error));
}

/** The same problem answer without Express: for the plain request listener around the app (shutdown). */
export function writeProblem(res: ServerResponse, error: HttpError, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(problemBody(error));
  res.writeHead(error.status, {
    ...error.headers,
    ...headers,
    'Content-Type': 'application/problem+json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(payload)),
  });
  res.end(payload);
}
