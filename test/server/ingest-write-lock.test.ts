// SQLite has one write lock for every team of every process. An ingest flush decides — evaluates
// conditions, places participants — on what it read before it takes the lock, and under the lock
// only reads again to check that it still holds (issue #37, item 5: one team's slow conditions
// kept other teams' ingests in another process waiting, 503 after the busy timeout). Where each
// condition is evaluated is seen from a connection of the test's own, as another process sees it:
// it tries to take the write lock, or to write, at each evaluation.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { components } from 'experimentation-api';
import { setQuota } from '../../server/admin/service';
import { useServer } from '../support/server';
import type { TestTeam } from '../support/team';

type Item = { status: number; data?: { assignments: Array<{ experiment: string; variant: string }> } };

// Called at each evaluation of a condition, before it is evaluated; the evaluation itself is the server's own.
const evaluating = vi.hoisted(() => ({ hook: undefined as (() => void) | undefined }));
vi.mock('../../domain/conditions/evaluate', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../domain/conditions/evaluate')>();
  return {
    ...original,
    evaluateCondition: (...args: Parameters<typeof original.evaluateCondition>) => {
      evaluating.hook?.();
      return original.evaluateCondition(...args);
    },
  };
});

describe('ingest flushes on sqlite and the write lock', () => {
  const server = useServer('sqlite');
  // Another process's connection: it never waits for the lock (busy timeout 0).
  let other: Database.Database;
  beforeAll(() => {
    other = new Database(join(server().storageEnv.DATA_DIR!, 'experimentation.sqlite'), { timeout: 0 });
  });
  afterAll(() => {
    evaluating.hook = undefined;
    other.close();
  });

  /** Whether `write` ran on the other connection, or was refused because a writer holds the lock. */
  function otherWrites(write: () => void): boolean {
    try {
      write();
      return true;
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_BUSY') return false;
      throw error;
    }
  }
  const lockIsFree = () =>
    otherWrites(() => {
      other.exec('begin immediate');
      other.exec('rollback');
    });

  async function experimentFor(team: TestTeam, conditions: components['schemas']['Condition']): Promise<void> {
    const path = { team: team.id };
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'goal' } });
    const created = await team.api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: 'pro_only', event: 'goal', conditions } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    for (const variant of [{ key: 'control', control: true }, { key: 'treatment' }]) {
      await team.api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: 'pro_only' } }, body: variant });
    }
    const started = await team.api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: 'pro_only' } } });
    expect(started.response.status).toBe(200);
  }

  async function batch(team: TestTeam, items: unknown[]): Promise<Item[]> {
    const response = await fetch(`${server().baseUrl}/api/teams/${team.id}/ingest/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { data: Item[] }).data;
  }

  it('when a batch of new and stored participants is flushed, then every condition is evaluated while another process may take the write lock', async () => {
    // Arrange: stored participants, and new ones, on both sides of the condition
    const team = await server().newTeam();
    await experimentFor(team, { plan: 'pro' });
    const participant = (i: number) => ({ key: `p-${i}`, attributes: { plan: i % 2 === 0 ? 'pro' : 'free' } });
    await batch(team, [0, 1, 2, 3].map((i) => ({ participant: participant(i), enrol: false })));
    const lockFree: boolean[] = [];
    evaluating.hook = () => lockFree.push(lockIsFree());

    // Act
    const items = await batch(team, [...Array(8).keys()].map((i) => ({ participant: participant(i), event: 'goal' })));
    evaluating.hook = undefined;

    // Assert: the pro participants entered, and no evaluation kept the lock from the other process
    expect(items.map((item) => item.data!.assignments.length)).toEqual([1, 0, 1, 0, 1, 0, 1, 0]);
    expect(lockFree.length).toBeGreaterThanOrEqual(8);
    expect(lockFree.filter((free) => !free)).toEqual([]);
  });

  /** Runs `write` on the other connection at the flush's first evaluation of a condition; answers whether it was written. */
  function atFirstEvaluation(write: () => void): boolean[] {
    const written: boolean[] = [];
    evaluating.hook = () => {
      if (written.length === 0) written.push(otherWrites(write));
    };
    return written;
  }

  async function participantsIn(team: TestTeam): Promise<number> {
    let sum = 0;
    for (const variant of ['control', 'treatment']) {
      const { data } = await team.api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', { params: { path: { team: team.id, experiment: 'pro_only', variant } } });
      sum += data!.data.participants;
    }
    return sum;
  }

  it("when another process changes a participant's attributes while the flush evaluates its conditions, then the flush decides again on what is stored", async () => {
    // Arrange: a pro participant, stored and not yet enrolled
    const team = await server().newTeam();
    await experimentFor(team, { plan: 'pro' });
    await batch(team, [{ participant: { key: 'switcher', attributes: { plan: 'pro' } }, enrol: false }]);
    const written = atFirstEvaluation(() => other.prepare(`update participants set attributes = '{"plan":"free"}' where team_id = ? and key = 'switcher'`).run(team.id));

    // Act: the flush reads it as pro; the other process makes it free before the flush writes
    const [item] = await batch(team, [{ participant: 'switcher', event: 'goal' }]);
    evaluating.hook = undefined;

    // Assert: the other process's write went through, and the flush decided on it: not enrolled, nothing counted
    expect(written).toEqual([true]);
    expect(item!.data!.assignments).toEqual([]);
    const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}', { params: { path: { team: team.id, participant: 'switcher' } } });
    expect(data!.data.attributes).toEqual({ plan: 'free' });
    expect(await participantsIn(team)).toBe(0);
  });

  it('when another process stops the experiment while the flush evaluates its conditions, then nobody enters it', async () => {
    // Arrange
    const team = await server().newTeam();
    await experimentFor(team, { plan: 'pro' });
    const written = atFirstEvaluation(() =>
      other.transaction(() => {
        other.prepare(`update experiments set status = 'stopped', stopped_at = updated_at where team_id = ? and key = 'pro_only'`).run(team.id);
        other.prepare('update teams set config_version = config_version + 1 where id = ?').run(team.id);
      })(),
    );

    // Act
    const [item] = await batch(team, [{ participant: { key: 'late', attributes: { plan: 'pro' } }, event: 'goal' }]);
    evaluating.hook = undefined;

    // Assert: decided again at the new config version
    expect(written).toEqual([true]);
    expect(item!.data!.assignments).toEqual([]);
    expect(await participantsIn(team)).toBe(0);
  });

  it("when another process uses up the team's quota while the flush evaluates its conditions, then the flush's ingests are refused 402, nothing stored", async () => {
    // Arrange: a quota of 10, 9 left
    const team = await server().newTeam();
    await experimentFor(team, { plan: 'pro' });
    await setQuota(server().storage.db, team.id, 10);
    await batch(team, [{ participant: 'first' }]);
    const written = atFirstEvaluation(() => other.prepare('update ingest_usage set count = 10 where team_id = ?').run(team.id));

    // Act
    const items = await batch(team, [{ participant: { key: 'a', attributes: { plan: 'pro' } } }, { participant: { key: 'b', attributes: { plan: 'pro' } } }]);
    evaluating.hook = undefined;

    // Assert
    expect(written).toEqual([true]);
    expect(items.map((item) => item.status)).toEqual([402, 402]);
    expect(await participantsIn(team)).toBe(0);
  });
});
