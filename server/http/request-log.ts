import { randomUUID } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { redactCredentials } from '../auth/credentials';

let requests = 0;

/** The request's log fields, for the line written when it finishes and for an error logged meanwhile. */
export interface LoggedRequest {
  id: number;
  /** Unique across processes and restarts: the `request_id` of the audit entries the request writes. */
  requestId: string;
  method: string;
  url: string;
  remoteAddress?: string;
  userAgent?: string;
}

/**
 * One log line per request, written when its response has finished or its client went away: the request's id, method,
 * URL (query values dropped: a client may put a token in `?access_token=`; anything shaped like
 * a token or ingest key redacted wherever it stands: a bare query, after `;`, in the path), client address and
 * user agent — never its headers, so never Authorization or Cookie — then the status and the
 * time taken. One call of the logger per request: no child logger, nothing set on the request.
 */
export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const logged: LoggedRequest = {
      id: ++requests,
      requestId: randomUUID(),
      method: req.method,
      url: redactCredentials(withoutQueryValues(req.originalUrl)),
      remoteAddress: req.socket.remoteAddress,
      userAgent: req.headers['user-agent'],
    };
    res.locals.loggedRequest = logged;
    // 'close', not 'finish': a response the client went away from first — a config stream it
    // closed, above all — is logged too, marked `closedByClient`.
    res.once('close', () => {
      const closedByClient = !res.writableFinished;
      logger.info({ req: logged, res: { statusCode: res.statusCode }, responseTime: Math.round(performance.now() - started), ...(closedByClient && { closedByClient }) }, 'request completed');
    });
    next();
  };
}

/** The fields of the request `res` answers, as its log line gives them (undefined before requestLog). */
export function loggedRequestOf(res: Response): LoggedRequest | undefined {
  return res.locals.loggedRequest as LoggedRequest | undefined;
}

function withoutQueryValues(url: string): string {
  const [path, query] = url.split('?', 2);
  if (query === undefined) return path!;
  const names = query.split('&').map((pair) => pair.split('=', 1)[0]);
  return `${path}?${names.map((name) => `${name}=[Redacted]`).join('&')}`;
}
