// OFREP's event stream (ADR-0008): the bulk answer's eventStreams, opened as a browser's
// EventSource opens it — the URL alone, no Authorization — and the notices a config change sends.
import { SelectQueryNode, TableNode, type KyselyPlugin } from 'kysely';
import { describe, expect, it } from 'vitest';
import { rotateIngestKey } from '../../server/admin/service';
import { hashCredential } from '../../server/auth/credentials';
import { ConfigStreams } from '../../server/config/streams';
import { streamToken } from '../../server/ofrep/stream-token';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { StreamReader } from '../support/event-stream';
import { ofrepErrors } from '../support/ofrep-schemas';
import type { TestTeam } from '../support/team';

// Generous: on a loaded machine a first request and its stream have taken well over 30 s.
const WITHIN = { timeout: 120_000, interval: 50 };
type Bulk = { flags: Array<{ key: string; value?: unknown }>; eventStreams: Array<{ type: string; endpoint: { requestUri: string }; inactivityDelaySec: number }> };

describe.each(engines)('OFREP event stream on %s', (engine) => {
  const server = useServer(engine);
  const limited = useServer(() => ({ beside: server(), app: { ofrepStreams: new ConfigStreams({ perCredential: 2, perProcess: 100 }, 'OFREP event streams') } }));
  // The same storage, its reads of the teams table counted as they reach the database.
  let teamReads = 0;
  const counted = useServer(() => ({ beside: server(), storage: { ...server().storage, db: server().storage.db.withPlugin(countingTeamReads(() => teamReads++)) } }));

  function evaluateAll(team: TestTeam, headers: Record<string, string> = {}, query = '') {
    return fetch(`${server().baseUrl}/api/teams/${team.id}/ofrep/v1/evaluate/flags${query}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${team.ingestKey}`, 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ context: { targetingKey: 'user-1' } }),
    });
  }

  async function flagTeam(): Promise<TestTeam> {
    const team = await server().newTeam();
    const created = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: 'banner', type: 'boolean', enabled: true, value: 'false' } });
    expect(created.response.status).toBe(200);
    return team;
  }

  async function flip(team: TestTeam, value: string): Promise<void> {
    const changed = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'banner' } }, body: { value } });
    expect(changed.response.status).toBe(200);
  }

  /** Opens a stream by URL alone, as EventSource does (no Authorization). */
  async function open(baseUrl: string, requestUri: string, headers: Record<string, string> = {}): Promise<{ response: Response; stream?: StreamReader }> {
    const response = await fetch(baseUrl + requestUri, { headers: { Origin: 'https://shop.example', ...headers } });
    return (response.headers.get('content-type') ?? '').startsWith('text/event-stream') ? { response, stream: new StreamReader(response) } : { response };
  }

  const notices = (stream: StreamReader) => stream.messages().filter((message) => message.data !== undefined).map((message) => ({ id: message.id, event: message.event, data: JSON.parse(message.data!) }));

  it('when the flags are evaluated, then the answer announces the event stream, and its URL alone opens it with a notice of the current config', async () => {
    const team = await flagTeam();
    const answer = await evaluateAll(team);
    const bulk = (await answer.json()) as Bulk;
    expect(ofrepErrors('bulkEvaluationSuccess', bulk)).toEqual([]);
    expect(bulk.eventStreams).toEqual([{ type: 'sse', endpoint: { requestUri: expect.stringMatching(new RegExp(`^/api/teams/${team.id}/ofrep/v1/event-stream\\?token=`)) }, inactivityDelaySec: 120 }]);
    const config = await fetch(`${server().baseUrl}/api/teams/${team.id}/config`, { headers: { Authorization: `Bearer ${team.ingestKey}` } });
    const etag = config.headers.get('etag')!;

    const { response, stream } = await open(server().baseUrl, bulk.eventStreams[0]!.endpoint.requestUri);
    try {
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      await expect.poll(() => notices(stream!), WITHIN).toEqual([{ id: etag, event: 'message', data: { type: 'refetchEvaluation', etag } }]);
      expect(stream!.text.startsWith('retry: 1000\n\n')).toBe(true);
    } finally {
      await stream?.close();
    }
  });

  it('when a flag flips, then a notice names the new config, and the re-fetch it triggers answers the flip, then 304', async () => {
    const team = await flagTeam();
    const first = await evaluateAll(team);
    const bulk = (await first.json()) as Bulk;
    const { stream } = await open(server().baseUrl, bulk.eventStreams[0]!.endpoint.requestUri);
    try {
      await expect.poll(() => notices(stream!).length, WITHIN).toBe(1);
      await flip(team, 'true');
      await expect.poll(() => notices(stream!).length, WITHIN).toBe(2);
      const notice = notices(stream!)[1]!;
      expect(notice.data.etag).not.toBe(notices(stream!)[0]!.data.etag);

      const query = `?flagConfigEtag=${encodeURIComponent(notice.data.etag)}`;
      const refetched = await evaluateAll(team, { 'If-None-Match': first.headers.get('etag')! }, query);
      expect(refetched.status).toBe(200);
      expect(((await refetched.json()) as Bulk).flags).toEqual([expect.objectContaining({ key: 'banner', value: true })]);
      const unchanged = await evaluateAll(team, { 'If-None-Match': refetched.headers.get('etag')! }, query);
      expect(unchanged.status).toBe(304);
    } finally {
      await stream?.close();
    }
  });

  it('when a flag flips under 20 open streams of a team, then they share one read of the team\'s row instead of one each', async () => {
    const team = await flagTeam();
    const bulk = (await (await evaluateAll(team)).json()) as Bulk;
    const opened = await Promise.all(Array.from({ length: 20 }, () => open(counted().baseUrl, bulk.eventStreams[0]!.endpoint.requestUri)));
    const streams = opened.map(({ stream }) => stream!);
    try {
      await expect.poll(() => streams.every((stream) => notices(stream).length === 1), WITHIN).toBe(true);
      const keepAlives = () => streams.reduce((sum, stream) => sum + stream.text.split(': keep-alive').length - 1, 0);
      const [readsBefore, keepAlivesBefore] = [teamReads, keepAlives()];
      await flip(team, 'true');
      await expect.poll(() => streams.every((stream) => notices(stream).length === 2), WITHIN).toBe(true);
      // A keep-alive (every 15 s, each stream on its own timer) looks on its own: on a slow machine some may fall in the window.
      expect(teamReads - readsBefore).toBeLessThanOrEqual(1 + 2 * (keepAlives() - keepAlivesBefore));
    } finally {
      await Promise.all(streams.map((stream) => stream.close()));
    }
  });

  it('when the stream reconnects with the id of the current config, then no notice is sent until the next change', async () => {
    const team = await flagTeam();
    const bulk = (await (await evaluateAll(team)).json()) as Bulk;
    const config = await fetch(`${server().baseUrl}/api/teams/${team.id}/config`, { headers: { Authorization: `Bearer ${team.ingestKey}` } });
    const { stream } = await open(server().baseUrl, bulk.eventStreams[0]!.endpoint.requestUri, { 'Last-Event-ID': config.headers.get('etag')! });
    try {
      await expect.poll(() => stream!.text, WITHIN).toContain('retry: 1000');
      await flip(team, 'true');
      await expect.poll(() => notices(stream!).length, WITHIN).toBe(1);
      expect(notices(stream!)[0]!.id).not.toBe(config.headers.get('etag'));
    } finally {
      await stream?.close();
    }
  });

  it('when the token is another team\'s, altered, expired, or absent, then the stream is 401 and does not open', async () => {
    const team = await flagTeam();
    const other = await flagTeam();
    const token = (await ((await evaluateAll(team)).json()) as Bulk).eventStreams[0]!.endpoint.requestUri.split('token=')[1]!;
    const keyed = { id: team.id, ingest_key_hash: hashCredential(team.ingestKey) };
    const expired = streamToken(keyed, Date.now() - 3 * 3600_000);
    const altered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    const uri = (teamId: number, value: string) => `/api/teams/${teamId}/ofrep/v1/event-stream?token=${value}`;
    for (const [path, why] of [[uri(other.id, token), "another team's"], [uri(team.id, altered), 'altered'], [uri(team.id, expired), 'expired'], [`/api/teams/${team.id}/ofrep/v1/event-stream`, 'absent']] as const) {
      const { response, stream } = await open(server().baseUrl, path);
      await stream?.close();
      expect(response.status, why).toBe(401);
    }
    // A token made now for the hour is the one the answer gave: the same for every answer of the hour.
    expect(streamToken(keyed, Date.now())).toBe(token);
  });

  it('when the ingest key is rotated, then its open stream ends and its token opens no other', async () => {
    const team = await flagTeam();
    const requestUri = ((await (await evaluateAll(team)).json()) as Bulk).eventStreams[0]!.endpoint.requestUri;
    const { stream } = await open(server().baseUrl, requestUri);
    try {
      await expect.poll(() => notices(stream!).length, WITHIN).toBe(1);
      await rotateIngestKey(server().storage.db, team.id);
      // A change is a look at the credential: the stream ends there.
      const changed = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: 'banner' } }, body: { value: 'true' } });
      expect(changed.response.status).toBe(200);
      await expect.poll(() => stream!.ended, WITHIN).toBe(true);
      expect(notices(stream!)).toHaveLength(1);
      expect((await open(server().baseUrl, requestUri)).response.status).toBe(401);
    } finally {
      await stream?.close();
    }
  });

  it('when one ingest key holds as many event streams as it may, then one more is 429 with Retry-After, and a closed one frees its slot', async () => {
    const team = await flagTeam();
    const requestUri = ((await (await evaluateAll(team)).json()) as Bulk).eventStreams[0]!.endpoint.requestUri;
    const held = [await open(limited().baseUrl, requestUri), await open(limited().baseUrl, requestUri)];
    try {
      expect(held.map(({ response }) => response.status)).toEqual([200, 200]);
      const refused = await open(limited().baseUrl, requestUri);
      expect(refused.response.status).toBe(429);
      expect(refused.response.headers.get('retry-after')).toMatch(/^[0-9]+$/);
      // The key in Authorization counts against the same slots.
      expect((await open(limited().baseUrl, `/api/teams/${team.id}/ofrep/v1/event-stream`, { Authorization: `Bearer ${team.ingestKey}` })).response.status).toBe(429);
      await held.pop()!.stream!.close();
      await expect
        .poll(async () => {
          const again = await open(limited().baseUrl, requestUri);
          if (again.stream) held.push(again);
          return again.response.status;
        }, WITHIN)
        .toBe(200);
    } finally {
      await Promise.all(held.map(({ stream }) => stream?.close()));
    }
  });
});

/** A query plugin that calls `counted` for each select from the teams table, and changes nothing. */
function countingTeamReads(counted: () => void): KyselyPlugin {
  return {
    transformQuery({ node }) {
      if (SelectQueryNode.is(node) && node.from?.froms.some((from) => TableNode.is(from) && from.table.identifier.name === 'teams')) counted();
      return node;
    },
    transformResult: async ({ result }) => result,
  };
}
