import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../../server/app';
import type { Storage } from '../../server/storage/database';
import { findTeam, type TeamRow } from '../../server/teams/store';
import { createBenchTeam } from './setup';
import type { ScratchStorage } from './storage';

/** The bench team, made through a server on `storage` that is closed again: for tools that then call the services in process. */
export async function benchTeamIn(storage: Storage, scratch: ScratchStorage): Promise<TeamRow> {
  const server = createApp({ storage, logger: pino({ level: 'silent' }), validateResponses: false }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const team = await createBenchTeam(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, scratch);
    return (await findTeam(storage.db, team.id))!;
  } finally {
    server.close();
  }
}

/** Batch items for the bench team: `items` participants never seen before, each with a `purchase` event and, if `keyed`, an idempotency key never used before. */
export function newParticipants(items: number, keyed = false) {
  return Array.from({ length: items }, () => {
    const id = randomBytes(6).toString('hex');
    return { participant: `p-${id}`, event: 'purchase', ...(keyed && { idempotency_key: `k-${id}` }) };
  });
}
