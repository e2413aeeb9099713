// An exclusion always holds: an ingest, an unenrol and a second ingest of a new participant that
// join one group-committed batch, in that order — and so run within one millisecond — never leave
// it enrolled again. (The second ingest used to take the participant for new, and skip reading
// its exclusions, when its clock read the participant's creation millisecond.) The use cases are
// called in one turn of the event loop, as three requests arriving together would call them, so
// that on SQLite they join the same batch in this order every round; on PostgreSQL the ingests
// flush together and the unenrol takes its turn before or after them under the team's lock.
import { describe, expect, it } from 'vitest';
import { ADMIN_CLI } from '../../server/audit/service';
import { ingestContexts } from '../../server/ingest/context';
import { ingest, ingestion } from '../../server/ingest/service';
import { ingestKeyWindowFromEnv } from '../../server/settings/settings';
import { unenrol } from '../../server/participants/service';
import { findTeam } from '../../server/teams/store';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createExperiment } from '../support/fixtures';

const ROUNDS = 50;

describe.each(engines)('unenrol racing ingest on %s', (engine) => {
  const server = useServer(engine);

  it(`when ingest, unenrol and ingest of a new participant join one batch (${ROUNDS} rounds), then it stays out of the experiment`, async () => {
    const team = await server().newTeam();
    await createExperiment(team, 'exp', { event: 'goal' });
    const { storage } = server();
    const row = (await findTeam(storage.db, team.id))!;
    const ingesting = ingestion(storage, ingestContexts(), ingestKeyWindowFromEnv());

    let unenrolled = 0;
    let enrolledAgain = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const participant = `racer-${round}`;
      const [, removed] = await Promise.all([
        ingest(ingesting, row, { participant }),
        // PostgreSQL: its turn may come before the ingests' flush, when there is no one to unenrol (404).
        unenrol(storage, row, participant, 'exp', ADMIN_CLI).catch((error: unknown) => error),
        ingest(ingesting, row, { participant }),
      ]);
      if (removed instanceof Error) continue;
      unenrolled++;
      const { data } = await team.api.GET('/api/teams/{team}/participants/{participant}/experiments', { params: { path: { team: team.id, participant } } });
      if (data!.data.length > 0) enrolledAgain++;
    }

    console.log(`[unenrol race ${engine}] ${ROUNDS} rounds of ingest, unenrol, ingest at once: ${unenrolled} unenrolled, ${enrolledAgain} of them enrolled again`);
    expect(unenrolled).toBeGreaterThan(ROUNDS / 5);
    expect(enrolledAgain).toBe(0);
  });
});
