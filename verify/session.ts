// One run of the kit against a deployment: each call goes to one operation of the contract, is
// checked against it, and is recorded under that operation.
import { EVENT_STREAM, eventsOf, operations, violations, type Operation } from './contract';

export interface Target {
  /** Where the API is served, without a trailing slash; its path is kept (`http://host/experiments` → `http://host/experiments/api/…`). */
  baseUrl: string;
  token: string;
  ingestKey: string;
}

/** What bounds a run against a deployment that stalls or floods: a per-call timeout, a deadline for the run, a body size. */
export interface Limits {
  /** How long one call may take, answer and body together. */
  timeoutMs: number;
  /** When the run must end (a `performance.now()` value): the call in flight is cut off then, and no other starts. */
  deadline: number;
  /** Bytes an answer's body may have; reading stops past them. */
  maxResponseBytes: number;
}

/** Thrown by a call once the run's deadline has passed: the run stops there. */
export class DeadlinePassed extends Error {}

export interface Call {
  /** What the call is for: "creates the kit's event", "a taken key is 409". */
  purpose: string;
  /** `POST /api/teams/{team}/events` — an operation of the contract. */
  operation: string;
  path?: Record<string, string | number>;
  query?: string;
  body?: unknown;
  /** 'token' (the default), 'ingest-key', the ingest key as OFREP's `X-API-Key` header, 'none', or a credential of its own. */
  credential?: 'token' | 'ingest-key' | 'ingest-key-header' | 'none' | { bearer: string };
  /** Request headers of the call's own (`If-None-Match`), beside the credential and content type. */
  headers?: Record<string, string>;
  /** A stream (`text/event-stream`): read until this many messages came after `retry`, then closed. */
  messages?: number;
  /** The status the contract says this call gets (or any of several, where either is right). */
  expect: number | number[];
}

export interface Check {
  purpose: string;
  request: string;
  status: number;
  failures: string[];
}

export class Session {
  readonly checks = new Map<string, Check[]>(operations.map((operation) => [operation.label, []]));

  constructor(
    private readonly target: Target,
    private readonly limits: Limits,
  ) {}

  /** Sends the call, checks the answer against the contract and the expected status; answers the parsed body (undefined when it is not JSON). */
  async call(call: Call): Promise<any> {
    const operation = operations.find((candidate) => candidate.label === call.operation);
    if (!operation) throw new Error(`the contract has no operation ${call.operation}`);
    const url = this.urlOf(operation, call);
    const headers: Record<string, string> = { ...call.headers };
    const bearer = this.bearerOf(call.credential ?? 'token');
    if (call.credential === 'ingest-key-header') headers['x-api-key'] = this.target.ingestKey;
    else if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const request = `${operation.method} ${url.pathname}${url.search}`;
    const failures: string[] = [];
    let status = 0;
    let parsed: any;
    const remaining = this.limits.deadline - performance.now();
    const cutByDeadline = remaining <= this.limits.timeoutMs;
    const signal = AbortSignal.timeout(Math.max(0, Math.round(Math.min(this.limits.timeoutMs, remaining))));
    try {
      if (remaining <= 0) throw new DeadlinePassed('the run reached its deadline (--deadline)');
      const response = await fetch(url, { method: operation.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body), signal });
      status = response.status;
      const streamed = call.messages !== undefined && (response.headers.get('content-type') ?? '').startsWith(EVENT_STREAM);
      const text = streamed ? await readEvents(response, call.messages! + 1, this.limits.maxResponseBytes) : await readBody(response, this.limits.maxResponseBytes);
      const expected = [call.expect].flat();
      if (!expected.includes(status)) failures.push(`status ${status}, expected ${expected.join(' or ')}`);
      failures.push(...violations(operation, { status, headers: response.headers, text }));
      try {
        parsed = streamed ? eventsOf(text) : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    } catch (error) {
      const deadlinePassed = error instanceof DeadlinePassed || (signal.aborted && cutByDeadline);
      // The check reads `→ <status or 'no answer'>: <failure>`.
      const cut = status ? 'the body did not end' : 'nothing';
      if (deadlinePassed) failures.push(`${cut} before the run's deadline (--deadline)`);
      else if (signal.aborted) failures.push(`${cut} within ${this.limits.timeoutMs / 1000} s (--timeout)`);
      else failures.push((error as Error).message);
      this.checks.get(operation.label)!.push({ purpose: call.purpose, request, status, failures });
      if (deadlinePassed) throw new DeadlinePassed('the run reached its deadline (--deadline)');
      return undefined;
    }
    this.checks.get(operation.label)!.push({ purpose: call.purpose, request, status, failures });
    return parsed;
  }

  /** Records a check of what an answer says beyond its schema (the kit's own expectation of the service). */
  expectThat(operation: string, purpose: string, holds: boolean): void {
    const checks = this.checks.get(operation);
    if (!checks) throw new Error(`the contract has no operation ${operation}`);
    checks.push({ purpose, request: operation, status: 200, failures: holds ? [] : [`${purpose}: not so`] });
  }

  private urlOf(operation: Operation, call: Call): URL {
    const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = call.path?.[name];
      if (value === undefined) throw new Error(`${call.operation}: no value for {${name}}`);
      return encodeURIComponent(String(value));
    });
    return new URL(`${this.target.baseUrl}${path}${call.query ? `?${call.query}` : ''}`);
  }

  private bearerOf(credential: NonNullable<Call['credential']>): string | undefined {
    if (credential === 'none' || credential === 'ingest-key-header') return undefined;
    if (credential === 'token') return this.target.token;
    if (credential === 'ingest-key') return this.target.ingestKey;
    return credential.bearer;
  }
}

/** The body as text, read only up to `maxBytes`: an endless or huge body fails the call instead of filling memory. */
async function readBody(response: Response, maxBytes: number): Promise<string> {
  const tooLarge = () => new Error(`the body exceeds ${maxBytes} bytes (--max-response-bytes)`);
  if (Number(response.headers.get('content-length')) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** A stream's text up to its `count`th message (comments aside), then the stream closed: it never ends by itself. */
async function readEvents(response: Response, count: number, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (eventsOf(text).length < count) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (text.length > maxBytes) throw new Error(`the stream exceeds ${maxBytes} bytes before its message ${count} (--max-response-bytes)`);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text;
}
