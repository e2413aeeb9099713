// The quickstart — the same shell block in README.md and in the contract's description (the first
// section of /docs) — run by bash as a newcomer would paste it: against the server as `npm start`
// runs it (a child process on embedded storage), with the admin CLI on the same storage.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startChild, stopAllChildren } from '../support/process';
import { freshStorage } from '../support/storage';

const root = fileURLToPath(new URL('../..', import.meta.url));
const contract = JSON.parse(readFileSync(`${root}generated/openapi.json`, 'utf8')) as { info: { description: string } };

/** The shell block that follows a `## Quickstart` heading. */
function quickstartOf(markdown: string): string {
  const section = markdown.split(/^## Quickstart\n/m)[1];
  const block = section?.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (!block) throw new Error('no ```sh block under ## Quickstart');
  return block;
}

describe('the quickstart', () => {
  afterAll(stopAllChildren);

  it('when README.md and the contract are read, then both give the same commands', () => {
    expect(quickstartOf(contract.info.description)).toBe(quickstartOf(readFileSync(`${root}README.md`, 'utf8')));
  });

  it('when its commands run against the started service, then each step succeeds and the statistics count the visitors', async () => {
    const { storageEnv, cleanup } = await freshStorage('sqlite');
    try {
      const server = await startChild(storageEnv);
      const script = quickstartOf(readFileSync(`${root}README.md`, 'utf8')).replaceAll('http://127.0.0.1:3000', server.baseUrl);

      const { stdout } = await promisify(execFile)('bash', ['-c', script], { cwd: root, env: { ...process.env, ...storageEnv } });

      const lines = stdout.trim().split('\n');
      expect(lines).toHaveLength(7);
      const [event, experiment, control, friendly, started, ingests, statistics] = lines as [string, string, string, string, string, string, string];
      expect(JSON.parse(event).data.key).toBe('signed_up');
      expect(JSON.parse(experiment).data).toMatchObject({ key: 'welcome_copy', event: 'signed_up', status: 'draft' });
      expect(JSON.parse(control).data).toMatchObject({ key: 'control', control: true });
      expect(JSON.parse(friendly).data).toMatchObject({ key: 'friendly', control: false });
      expect(JSON.parse(started).data.status).toBe('running');
      expect(ingests.trim().split(' ')).toEqual(Array(20).fill('200'));
      const stats = JSON.parse(statistics).data as { experiment: string; variant: string; participants: number; events: Array<{ event: string; unique_conversions: number }> };
      expect(stats).toMatchObject({ experiment: 'welcome_copy', variant: 'friendly', control: 'control' });
      expect(stats.participants).toBeGreaterThan(0);
      expect(stats.participants).toBeLessThan(20);
      expect(stats.events[0]!.event).toBe('signed_up');
    } finally {
      await stopAllChildren();
      await cleanup();
    }
  });
});
