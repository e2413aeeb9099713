import { Router, type Request } from 'express';
import type { components } from '../../generated/api';
import type { Identify } from '../auth/identify';
import { hashCredential } from '../auth/credentials';
import { principalOf } from '../auth/principal';
import { etagOf, reachedTeam, serveTeamStream } from '../config/stream';
import type { ConfigStreams } from '../config/streams';
import { operationOf } from '../contract/routing';
import { NotFound, Unauthorized } from '../http/errors';
import type { Storage } from '../storage/database';
import { requireTeam } from '../teams/access';
import { teamIdOf } from '../teams/middleware';
import { findTeam, type TeamRow } from '../teams/store';
import { streamToken, vouches } from './stream-token';

type OfrepEventStream = components['schemas']['OfrepEventStream'];

/** What the OFREP event streams are called in refusals. */
export const OFREP_STREAMS = 'OFREP event streams';
/** How long a page's provider keeps its stream while the page is hidden (OFREP's default). */
const INACTIVITY_DELAY_SECONDS = 120;

/** The team's event stream as the bulk answer announces it: its path, with a token the ingest key vouches for. */
export function eventStreamOf(team: TeamRow, nowMs: number): OfrepEventStream {
  const requestUri = `/api/teams/${team.id}/ofrep/v1/event-stream?token=${streamToken(team, nowMs)}`;
  return { type: 'sse', endpoint: { requestUri }, inactivityDelaySec: INACTIVITY_DELAY_SECONDS };
}

/** A change notice: the team's config moved to the row's version, so re-fetch the evaluations. */
function noticeOf(team: TeamRow): string {
  const etag = etagOf(team);
  return `id: ${etag}\nevent: message\ndata: ${JSON.stringify({ type: 'refetchEvaluation', etag })}\n\n`;
}

/**
 * `GET /api/teams/{team}/ofrep/v1/event-stream` (the contract's `ofrep_event_stream`): opened
 * with the URL's token (a browser's EventSource) or with a credential in `Authorization`, which
 * wins when both are sent.
 */
export function ofrepEventStreamRoutes(storage: Storage, { identify, streams }: { identify: Identify; streams: ConfigStreams }): Router {
  const router = Router({ mergeParams: true, caseSensitive: true });
  const readTeam = sharedReads((teamId: number) => findTeam(storage.db, teamId));
  router.get('/', async (req, res) => {
    const teamId = teamIdOf((req.params as { team?: string }).team);
    const bearer = bearerOf(req);
    if (bearer !== undefined) {
      const team = await requireTeam(storage.db, principalOf(res), teamId, 'config', operationOf(res).role);
      serveTeamStream(storage, streams, req, res, team, { holder: hashCredential(bearer), message: noticeOf, recheck: () => reachedTeam(storage, identify, bearer, teamId) });
      return;
    }
    const token = String(req.query.token);
    const team = await findTeam(storage.db, teamId);
    if (!team) throw new NotFound(`No team ${teamId}.`);
    if (!vouches(team, token, Date.now())) throw new Unauthorized('The event stream token is not one of this team, or it expired: evaluate the flags again (POST …/ofrep/v1/evaluate/flags) for a current one.');
    // Counted against the ingest key that vouches for it; ended when the key is rotated or the team deleted.
    const recheck = async () => {
      const row = await readTeam(teamId);
      return row && vouches(row, token) ? row : undefined;
    };
    serveTeamStream(storage, streams, req, res, team, { holder: team.ingest_key_hash, message: noticeOf, recheck });
  });
  return router;
}

/** The bearer credential authentication let through, if the request sent one. */
function bearerOf(req: Request): string | undefined {
  const header = req.get('authorization');
  return header === undefined ? undefined : header.replace(/^Bearer +/i, '');
}

/**
 * One read for every caller that asks while it is in flight: a config change reaches all of a
 * team's streams at once, and each looks at the team's row, so they share one query, not one each.
 * Nothing is kept once the read has answered.
 */
function sharedReads<T>(read: (teamId: number) => Promise<T>): (teamId: number) => Promise<T> {
  const inFlight = new Map<number, Promise<T>>();
  return (teamId) => {
    let answer = inFlight.get(teamId);
    if (answer === undefined) {
      answer = read(teamId).finally(() => inFlight.delete(teamId));
      inFlight.set(teamId, answer);
    }
    return answer;
  };
}
