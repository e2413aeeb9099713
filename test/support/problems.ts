import { expect } from 'vitest';
import type { components } from 'experimentation-api';

type Problem = components['schemas']['Problem'];

/** Status, media type and RFC 9457 body of an error answer; for a 400 also the fields it names. */
export function expectProblem(response: Response, body: unknown, status: number, title: string, paths: string[] = []): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(body).toMatchObject({ type: expect.stringMatching(/^urn:experimentation:problem:/), title, status, detail: expect.any(String) });
  if (status === 400) {
    const named = ((body as Problem).errors ?? []).map((e) => e.path);
    for (const path of paths) expect(named).toContain(path);
  }
}
