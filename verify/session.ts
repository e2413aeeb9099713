// One run of the kit against a deployment: each call goes to one operation of the contract, is
// checked against it, and is recorded under that operation.
import { operations, violations, type Operation } from './contract';

export interface Target {
  baseUrl: string;
  token: string;
  ingestKey: string;
}

export interface Call {
  /** What the call is for: "creates the kit's event", "a taken key is 409". */
  purpose: string;
  /** `POST /api/teams/{team}/events` — an operation of the contract. */
  operation: string;
  path?: Record<string, string | number>;
  query?: string;
  body?: unknown;
  /** 'token' (the default), 'ingest-key', 'none', or a credential of its own. */
  credential?: 'token' | 'ingest-key' | 'none' | { bearer: string };
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

  constructor(private readonly target: Target) {}

  /** Sends the call, checks the answer against the contract and the expected status; answers the parsed body (undefined when it is not JSON). */
  async call(call: Call): Promise<any> {
    const operation = operations.find((candidate) => candidate.label === call.operation);
    if (!operation) throw new Error(`the contract has no operation ${call.operation}`);
    const url = this.urlOf(operation, call);
    const headers: Record<string, string> = {};
    const bearer = this.bearerOf(call.credential ?? 'token');
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const request = `${operation.method} ${url.pathname}${url.search}`;
    const failures: string[] = [];
    let status = 0;
    let parsed: any;
    try {
      const response = await fetch(url, { method: operation.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) });
      const text = await response.text();
      status = response.status;
      const expected = [call.expect].flat();
      if (!expected.includes(status)) failures.push(`status ${status}, expected ${expected.join(' or ')}`);
      failures.push(...violations(operation, { status, headers: response.headers, text }));
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    } catch (error) {
      failures.push(`no answer: ${(error as Error).message}`);
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
    return new URL(`${path}${call.query ? `?${call.query}` : ''}`, this.target.baseUrl);
  }

  private bearerOf(credential: NonNullable<Call['credential']>): string | undefined {
    if (credential === 'none') return undefined;
    if (credential === 'token') return this.target.token;
    if (credential === 'ingest-key') return this.target.ingestKey;
    return credential.bearer;
  }
}
