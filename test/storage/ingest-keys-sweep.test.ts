// removeExpiredKeys on real storage: the keys created before the cutoff go, across teams and in
// more statements than one when there are many; the others stay, and a key that was swept can
// be stored again by an ingest. Both engines.
import { describe, expect, it } from 'vitest';
import { removeExpiredKeys } from '../../server/ingest/keys';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { ingestOk } from '../support/fixtures';

describe.each(engines)('sweeping ingest keys on %s', (engine) => {
  const server = useServer(engine);

  it('when keys of two teams are older and newer than the cutoff, then exactly the older ones are removed, however many', async () => {
    const { storage } = server();
    const [one, two] = [await server().newTeam(), await server().newTeam()];
    const old = '2026-01-01T00:00:00.000Z';
    const cutoff = '2026-01-02T00:00:00.000Z';
    const recent = '2026-01-03T00:00:00.000Z';
    const rows = [
      ...Array.from({ length: 6000 }, (_, i) => ({ team_id: one.id, key: `old-${i}`, outcome: '{}', created_at: old })),
      { team_id: two.id, key: 'old', outcome: '{}', created_at: old },
      { team_id: one.id, key: 'recent', outcome: '{}', created_at: recent },
      { team_id: two.id, key: 'at-cutoff', outcome: '{}', created_at: cutoff },
    ];
    for (let i = 0; i < rows.length; i += 1000) await storage.db.insertInto('ingest_keys').values(rows.slice(i, i + 1000)).execute();

    const removed = await removeExpiredKeys(storage, cutoff);

    expect(removed).toBe(6001);
    const left = await storage.db.selectFrom('ingest_keys').select(['team_id', 'key']).where('team_id', 'in', [one.id, two.id]).orderBy('key').execute();
    expect(left).toEqual([
      { team_id: two.id, key: 'at-cutoff' },
      { team_id: one.id, key: 'recent' },
    ]);
  });

  it('when a swept key is sent again, then the ingest is processed and stores the key anew', async () => {
    const team = await server().newTeam();
    await ingestOk(team, { participant: 'again', idempotency_key: 'swept-key' });
    await removeExpiredKeys(server().storage, new Date(Date.now() + 60_000).toISOString());

    const answer = await ingestOk(team, { participant: { key: 'again', notes: 'second time' }, idempotency_key: 'swept-key' });

    expect(answer.participant.notes).toBe('second time');
    const stored = await server().storage.db.selectFrom('ingest_keys').select('outcome').where('team_id', '=', team.id).execute();
    expect(stored.map((row) => JSON.parse(row.outcome).participant.notes)).toEqual(['second time']);
  });
});
