import type { Request, Response } from 'express';
import type { Identify } from '../auth/identify';
import { HttpError } from '../http/errors';
import type { Storage } from '../storage/database';
import { requireTeam } from '../teams/access';
import type { TeamRow } from '../teams/store';
import { currentConfig, type Config, type TeamConfigs } from './service';
import type { ConfigStreams } from './streams';

/** How often a comment line keeps an idle stream alive, and the team's version is looked at again. */
export const KEEP_ALIVE_MS = 15_000;
/** What a client may leave unread before its stream is cut off: it is not reading, or far too slowly. */
const MAX_UNREAD_BYTES = 4 * 1024 * 1024;

/** The config's entity tag, as GET …/config answers it and as a stream's message `id`. */
export function etagOf(team: Pick<TeamRow, 'id' | 'config_version'>): string {
  return `"${team.id}.${team.config_version}"`;
}

/** Each config's message, made once: every stream of the team sends (and, unread, holds) the same string. */
const messages = new WeakMap<Config, string>();

/** The `config` message of the team's config at its version (`config` is the one built for it). */
function messageOf(team: TeamRow, config: Config): string {
  let message = messages.get(config);
  if (message === undefined) {
    message = `event: config\nid: ${etagOf(team)}\ndata: ${JSON.stringify({ data: config })}\n\n`;
    messages.set(config, message);
  }
  return message;
}

export interface StreamContext {
  storage: Storage;
  configs: TeamConfigs;
  identify: Identify;
  streams: ConfigStreams;
}

/** The team as `principal` reaches it now, or undefined when it no longer does (a refusal, not a failure). */
export async function reachedTeam(storage: Storage, identify: Identify, bearer: string, teamId: number): Promise<TeamRow | undefined> {
  const principal = await identify(bearer);
  if (!principal) return undefined;
  try {
    return await requireTeam(storage.db, principal, teamId, 'config');
  } catch (error) {
    if (error instanceof HttpError) return undefined;
    throw error;
  }
}

/**
 * Serves one config stream (the contract's `config_stream`): the team's config whenever its
 * version moves, as `serveTeamStream` tells it.
 */
export function serveConfigStream({ storage, configs, identify, streams }: StreamContext, req: Request, res: Response, team: TeamRow, credential: { bearer: string; hash: string }): void {
  serveTeamStream(storage, streams, req, res, team, {
    holder: credential.hash,
    message: async (row) => messageOf(row, await currentConfig(storage.db, configs, row)),
    recheck: () => reachedTeam(storage, identify, credential.bearer, team.id),
  });
}

/** What a team's stream sends and how it checks its credential. */
export interface TeamStream {
  /** Who the stream is counted against, in its bounds (a credential's hash). */
  holder: string;
  /** The message telling the team's state at the row's version. */
  message(row: TeamRow): Promise<string> | string;
  /** The team as the stream's credential reaches it now, or undefined when it no longer does: the stream ends. */
  recheck(): Promise<TeamRow | undefined>;
}

/**
 * Serves one stream of a team: admits it under the bounds, sends `retry`, then the current
 * version's message unless the client holds it (`Last-Event-ID`), then a message whenever the
 * team's version moves — told by the storage's signals, and looked at on every keep-alive.
 * Each look goes through `recheck`, the same checks as the request that opened the stream, so
 * a revoked credential or a deleted team ends it.
 */
export function serveTeamStream(storage: Storage, streams: ConfigStreams, req: Request, res: Response, team: TeamRow, stream: TeamStream): void {
  // The client went away while the team was looked up: its 'close' has been and gone.
  if (res.destroyed) return;
  let sentVersion = req.get('Last-Event-ID') === etagOf(team) ? team.config_version : undefined;
  let ended = false;
  let checking = false;
  let checkAgain = false;

  /** Stops sending and frees the stream's slot; false when it was stopped already. */
  const stop = (): boolean => {
    if (ended) return false;
    ended = true;
    clearInterval(keepAlive);
    unsubscribe();
    release();
    return true;
  };
  const end = () => {
    if (stop()) res.end();
  };
  /**
   * Ends the stream with its connection at once, what it has not sent dropped (a TCP reset):
   * `end` would leave the socket, and all it holds, alive until the client reads — past its slot.
   */
  const cutOff = () => {
    if (!stop()) return;
    if (res.socket) res.socket.resetAndDestroy();
    else res.destroy();
  };
  const release = streams.admit(stream.holder, { end });

  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    // Proxies such as nginx buffer answers unless told not to.
    'X-Accel-Buffering': 'no',
  });
  res.write('retry: 1000\n\n');

  const write = (text: string) => {
    if (ended) return;
    if (res.destroyed) return end();
    res.write(text);
    if (res.writableLength > MAX_UNREAD_BYTES) cutOff();
  };

  /** Sends the message if the team's version moved since the last one sent; one look at a time, the last request kept. */
  const check = async (current?: TeamRow): Promise<void> => {
    if (ended) return;
    if (checking) {
      checkAgain = true;
      return;
    }
    checking = true;
    try {
      do {
        checkAgain = false;
        const row = current ?? (await stream.recheck());
        current = undefined;
        if (!row || ended) return end();
        if (row.config_version === sentVersion) continue;
        const message = await stream.message(row);
        if (ended) return;
        sentVersion = row.config_version;
        write(message);
      } while (checkAgain && !ended);
    } catch {
      // Storage does not answer: the next signal or keep-alive looks again.
    } finally {
      checking = false;
    }
  };

  const unsubscribe = storage.signals.subscribe(team.id, () => void check());
  const keepAlive = setInterval(() => {
    write(': keep-alive\n\n');
    void check();
  }, KEEP_ALIVE_MS);
  res.once('close', end);
  void check(team);
}
