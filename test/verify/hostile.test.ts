// The conformance kit against deployments that misbehave on purpose — small HTTP servers of the
// test's own, not the service: one that never answers, one that trickles its body, one whose body
// never ends, one whose answers carry control characters, and one served under a path. Each run
// is bounded by the kit's own options (--timeout, --deadline, --max-response-bytes).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'verify-hostile-'));
const CREDENTIALS = ['--token', `est_${'t'.repeat(43)}`, '--ingest-key', `esk_${'k'.repeat(43)}`];

interface Hostile {
  url: string;
  /** Each request's URL and whether it carried a credential. */
  requests: Array<{ url: string; authorized: boolean }>;
  close(): Promise<void>;
}

const servers: Hostile[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function hostile(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<Hostile> {
  const requests: Hostile['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url!, authorized: req.headers.authorization !== undefined });
    handle(req, res);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const started: Hostile = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  servers.push(started);
  return started;
}

async function verify(args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)('npm', ['run', '-s', 'verify', '--', ...CREDENTIALS, ...args], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, output: failure.stdout + failure.stderr };
  }
}

/** Writes until the client goes away, heeding back-pressure: a body that never ends. */
function endless(res: ServerResponse): void {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const write = () => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', write);
  };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"status":"');
  write();
}

describe('npm run verify against a deployment that misbehaves', () => {
  it('when the deployment never answers, then each call fails at --timeout and the run stops at --deadline', async () => {
    // Arrange
    const server = await hostile(() => {});

    // Act
    const { code, output } = await verify(['--base-url', server.url, '--timeout', '1', '--deadline', '4']);

    // Assert: the first calls each waited a second, the one in flight at the deadline was cut off there
    expect(code, output).toBe(1);
    expect(output).toContain('GET /api/health (the health check needs no credential) → no answer: nothing within 1 s (--timeout)');
    expect(output).toContain('GET /api/health (an unknown credential is refused) → no answer: nothing within 1 s (--timeout)');
    expect(output).toContain("→ no answer: nothing before the run's deadline (--deadline)");
    expect(output).toMatch(/The run stopped early: the run reached its deadline \(--deadline\); resources whose keys start with verify_[0-9a-f]{8} may remain\./);
  });

  it('when the deployment trickles a body a byte at a time, then the call fails at --timeout', async () => {
    // Arrange
    const timers = new Set<NodeJS.Timeout>();
    const server = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 100);
      timers.add(timer);
      res.once('close', () => clearInterval(timer));
    });

    // Act
    const { code, output } = await verify(['--base-url', server.url, '--timeout', '1', '--deadline', '4']);
    for (const timer of timers) clearInterval(timer);

    // Assert
    expect(code, output).toBe(1);
    expect(output).toContain('GET /api/health (the health check needs no credential) → 200: the body did not end within 1 s (--timeout)');
  });

  it('when the deployment answers a body that never ends, then the call fails past --max-response-bytes and the kit reads no further', async () => {
    // Arrange
    const server = await hostile((_req, res) => endless(res));

    // Act
    const { code, output } = await verify(['--base-url', server.url, '--max-response-bytes', '100000', '--timeout', '60', '--deadline', '120']);

    // Assert: every call was cut off by size, none by time; the run went on to the end of its first step
    expect(code, output).toBe(1);
    expect(output).toContain('GET /api/health (the health check needs no credential) → 200: the body exceeds 100000 bytes (--max-response-bytes)');
    expect(output).not.toContain('--timeout)');
    expect(output).toContain('no team to work in');
  });

  it('when answers carry control characters in property names, then the terminal output and the JUnit file show them escaped and stay well-formed', async () => {
    // Arrange: a name that would set the terminal title, clear the screen and print a verdict of its own
    const evil = '\u001b]0;owned\u0007\u001b[2J\u001b[H\r\n40 of 40 operations conform (0 calls, 0.0 s).\n\u0000\u0085\u202e';
    const server = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ [evil]: 1, '\ud800': 2 }));
    });
    const report = join(scratch, 'control.xml');

    // Act
    const { code, output } = await verify(['--base-url', server.url, '--team', '1', '--timeout', '10', '--deadline', '120', '--report', 'junit', '--report-file', report]);

    // Assert
    expect(code, output).toBe(1);
    expect(output).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(output).toContain('body /\\u001b]0;owned\\u0007\\u001b[2J\\u001b[H\\u000d\\u000a40 of 40 operations conform (0 calls, 0.0 s).\\u000a\\u0000\\u0085\\u202e is not in the contract');
    expect(output).toContain('body /\\ud800 is not in the contract');
    expect(output.split('\n').filter((line) => /operations conform/.test(line) && !line.startsWith('FAIL '))).toEqual([expect.stringMatching(/^0 of 61 operations conform/)]);
    const junit = readFileSync(report, 'utf8');
    expect(junit).not.toMatch(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u);
    const parsed = await promisify(execFile)('python3', ['-c', 'import sys, xml.etree.ElementTree as ET; print(len(ET.parse(sys.argv[1]).getroot().iter("testcase").__next__().attrib))', report]);
    expect(parsed.stdout.trim()).toBe('2');
    expect(junit).toContain('\\u001b]0;owned\\u0007');
  });

  it('when the base URL has a path, then every call goes under it', async () => {
    // Arrange: a deployment under /experiments that knows nothing
    const server = await hostile((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ type: 'about:blank', title: 'Not Found', status: 404 }));
    });

    // Act
    const { code, output } = await verify(['--base-url', `${server.url}/experiments/`, '--team', '1', '--timeout', '10', '--deadline', '120']);

    // Assert
    expect(code, output).toBe(1);
    expect(server.requests.length).toBeGreaterThan(20);
    expect(server.requests.filter((request) => !request.url.startsWith('/experiments/api/'))).toEqual([]);
    expect(server.requests.filter((request) => request.authorized).length).toBeGreaterThan(20);
  });

  it.each([
    ['a base URL with a query', ['--base-url', 'http://127.0.0.1:1/api?x=1']],
    ['a timeout that is not a number', ['--base-url', 'http://127.0.0.1:1', '--timeout', '1e3']],
    ['a deadline of zero', ['--base-url', 'http://127.0.0.1:1', '--deadline', '0']],
    ['a response size that is negative', ['--base-url', 'http://127.0.0.1:1', '--max-response-bytes', '-1']],
  ])('when the command line has %s, then it exits 2 with the usage', async (_what, args) => {
    const { code, output } = await verify(args);

    expect(code).toBe(2);
    expect(output).toContain('usage: npm run verify');
  });
});
