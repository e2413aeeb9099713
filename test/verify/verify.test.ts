// The conformance kit (`npm run verify`) as a consumer's CI runs it: against the real server it
// passes and leaves the team as it found it; against a server that breaks the contract it fails,
// naming the operation and the field.
import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment, ingestOk } from '../support/fixtures';
import type { TestTeam } from '../support/team';

const root = fileURLToPath(new URL('../..', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'verify-'));

async function verify(baseUrl: string, team: TestTeam, report: string): Promise<{ code: number; output: string }> {
  const args = ['run', '-s', 'verify', '--', '--base-url', baseUrl, '--token', team.token, '--ingest-key', team.ingestKey, '--report', 'junit', '--report-file', report];
  try {
    const { stdout } = await promisify(execFile)('npm', args, { cwd: root });
    return { code: 0, output: stdout };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, output: failure.stdout + failure.stderr };
  }
}

/** Everything of the team its owner can read, in one comparable value. */
async function snapshot(baseUrl: string, team: TestTeam): Promise<unknown> {
  const get = async (path: string) => {
    const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${team.token}` } });
    return ((await response.json()) as { data: unknown }).data;
  };
  // The kit's own ingests count against the month's quota, as any client's do: `ingest_used` moves, nothing else may.
  const { ingest_used: _counted, ...described } = (await get(`/api/teams/${team.id}?include=events,experiments.variants,participants,features`)) as { ingest_used: number };
  return {
    team: described,
    statistics: await get(`/api/teams/${team.id}/experiments/theirs/variants/treatment/statistics`),
    config: await get(`/api/teams/${team.id}/config`),
    participant: await get(`/api/teams/${team.id}/participants/their-user`),
  };
}

/**
 * A proxy that breaks the contract the way a faulty deployment would: it drops `seed` from every
 * experiment it answers and answers a created event with 201 instead of 200.
 */
async function breakingProxy(upstream: string): Promise<{ url: string; server: Server }> {
  const read = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return chunks.length > 0 ? Buffer.concat(chunks) : undefined;
  };
  const server = createServer(async (req, res) => {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => ['authorization', 'content-type'].includes(name))) as Record<string, string>;
    const answer = await fetch(`${upstream}${req.url}`, { method: req.method, headers, body: await read(req) });
    if ((answer.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      // A stream never ends: passed on as it comes, and closed upstream when the kit closes it.
      res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([name]) => !['transfer-encoding', 'connection', 'keep-alive'].includes(name))));
      const body = Readable.fromWeb(answer.body! as WebReadableStream);
      res.once('close', () => body.destroy());
      body.on('error', () => res.destroy()).pipe(res);
      return;
    }
    let text = await answer.text();
    const isExperiment = /\/experiments\/[^/]+$/.test(req.url!.split('?')[0]!) && answer.status === 200;
    if (isExperiment) {
      const body = JSON.parse(text) as { data: { seed?: string } };
      delete body.data.seed;
      text = JSON.stringify(body);
    }
    const status = req.method === 'POST' && /\/events$/.test(req.url!) && answer.status === 200 ? 201 : answer.status;
    // The upstream's headers, but for those of the body's framing (the body may have changed).
    const passed = [...answer.headers].filter(([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name));
    res.writeHead(status, Object.fromEntries(passed));
    res.end(text);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.each(engines)('npm run verify on %s', (engine) => {
  const server = useServer(engine);

  /** A team with data of its own that the kit must not touch: a running experiment with a converted participant, a flag. */
  async function teamWithData(): Promise<TestTeam> {
    const team = await server().newTeam();
    await createExperiment(team, 'theirs', { event: 'their_goal' });
    await ingestOk(team, { participant: 'their-user', event: 'their_goal' });
    await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'their_flag', enabled: true } });
    return team;
  }

  it('when it checks the real server, then all 61 operations conform, the JUnit report says so, and the team is as it was', async () => {
    const team = await teamWithData();
    const before = await snapshot(server().baseUrl, team);
    const report = join(scratch, `${engine}-pass.xml`);

    const { code, output } = await verify(server().baseUrl, team, report);

    expect(output).toContain('61 of 61 operations conform');
    expect(code, output).toBe(0);
    expect(output).not.toContain('FAIL');
    expect(readFileSync(report, 'utf8')).toContain('<testsuites name="contract conformance" tests="61" failures="0"');
    expect(await snapshot(server().baseUrl, team)).toEqual(before);
    console.log(`[verify ${engine}] ${output.trim().split('\n').at(-1)}`);
  });

  it('when a deployment drops a required field and changes a status, then it fails naming the operation and the field', async () => {
    const team = await teamWithData();
    const proxy = await breakingProxy(server().baseUrl);
    const report = join(scratch, `${engine}-fail.xml`);
    try {
      const { code, output } = await verify(proxy.url, team, report);

      expect(code).toBe(1);
      expect(output).toMatch(/FAIL GET \/api\/teams\/\{team\}\/experiments\/\{experiment\} \(experiments_get\): .* → 200: body \/data\/seed is missing \(required\)/);
      expect(output).toMatch(/FAIL PUT \/api\/teams\/\{team\}\/experiments\/\{experiment\} \(experiments_update\): .* → 200: body \/data\/seed is missing \(required\)/);
      expect(output).toMatch(/FAIL POST \/api\/teams\/\{team\}\/events \(events_create\): .* → 201: status 201, expected 200/);
      expect(output).toMatch(/FAIL POST \/api\/teams\/\{team\}\/events \(events_create\): .* → 201: status 201 is not documented/);
      const junit = readFileSync(report, 'utf8');
      expect(junit).toMatch(/<testcase classname="contract" name="GET \/api\/teams\/\{team\}\/experiments\/\{experiment\} \(experiments_get\)">\s*<failure message="[^"]*\/data\/seed is missing/);
      expect(junit).not.toContain('failures="0"');
      expect(output).toMatch(/GET \/api\/teams\/\{team\}\/features\/\{feature\}\s+features_get\s+\d+\s+[\d ]+\s+ok\n/); // and the ones that pass
    } finally {
      proxy.server.close();
    }
  });
});
