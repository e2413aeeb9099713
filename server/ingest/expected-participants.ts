import { knownNotRunning } from './context';
import { participantKey } from '../ledger/change';
import type { NamedParticipant, QuotaUse } from '../ledger/port';
import type { IngestJob } from './flush';

/**
 * The participants of the ingests a flush expects to accept, so that it reads them — and their
 * histories — when it opens, with its locks and config, instead of after deciding. Each ingest
 * is judged in order, as the flush will judge it, from what this process last saw: its team's
 * latest context (an event or experiment known to be refused, an experiment known not to be
 * running) and its quota use at the last flush, counting the expected ingests before it. An
 * ingest of a team with no context yet is not expected.
 *
 * A wrong guess costs a read, never a decision: the flush decides every ingest anew at the
 * config version and quota use it reads under its locks, reads the participants of accepted
 * ingests it did not expect after deciding, and leaves alone those it read for ingests it
 * refuses. So an ingest refused for what this process already knew reads no participant.
 */
export function expectedParticipants(jobs: IngestJob[], lastUsed: QuotaUse): NamedParticipant[] {
  const counted = new Map<number, number>();
  const expected = new Map<string, NamedParticipant>();
  for (const job of jobs) {
    const { team, input } = job;
    const context = job.contexts.latest(team.id);
    if (!context) continue;
    const used = (lastUsed.get(team.id) ?? 0) + (counted.get(team.id) ?? 0);
    if (team.ingest_limit !== null && used >= team.ingest_limit) continue;
    if (input.event !== undefined && context.unknown.has('event', input.event)) continue;
    if (input.experiment !== undefined && !context.running.some((experiment) => experiment.key === input.experiment) && knownNotRunning(context, input.experiment)) continue;
    counted.set(team.id, (counted.get(team.id) ?? 0) + 1);
    const key = typeof input.participant === 'string' ? input.participant : input.participant.key;
    expected.set(participantKey(team.id, key), { team: team.id, key });
  }
  return [...expected.values()];
}
