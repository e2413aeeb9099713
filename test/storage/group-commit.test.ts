import { describe, expect, it } from 'vitest';
import type { Db } from '../../server/storage/database';
import { engines } from '../support/engines';
import { useServer } from '../support/server';

describe.each(engines)('group commit on %s', (engine) => {
  const server = useServer(engine);
  const eventWriter = (teamId: number) => (key: string) => (trx: Db) => {
    const at = new Date().toISOString();
    return trx.insertInto('events').values({ team_id: teamId, key, description: null, type: 'unique', created_at: at, updated_at: at }).execute();
  };

  it('when units run concurrently and one fails after writing, then the others commit and the failed one leaves nothing', async () => {
    const { storage } = server();
    const team = await server().newTeam();
    const addEvent = eventWriter(team.id);

    const outcomes = await Promise.allSettled([
      storage.batched(addEvent('first')),
      storage.batched(async (trx) => {
        await addEvent('failed')(trx);
        throw new Error('this unit fails after its write');
      }),
      storage.batched(addEvent('third')),
    ]);

    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const keys = await storage.db.selectFrom('events').select('key').where('team_id', '=', team.id).orderBy('key').execute();
    expect(keys.map((row) => row.key)).toEqual(['first', 'third']);
  });

  it('when a unit fails with a duplicate key, then only its caller sees the error', async () => {
    const { storage } = server();
    const team = await server().newTeam();
    const addEvent = eventWriter(team.id);

    const outcomes = await Promise.allSettled([storage.batched(addEvent('same')), storage.batched(addEvent('same')), storage.batched(addEvent('other'))]);

    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const keys = await storage.db.selectFrom('events').select('key').where('team_id', '=', team.id).orderBy('key').execute();
    expect(keys.map((row) => row.key)).toEqual(['other', 'same']);
  });
});
