import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';

interface SerializedRequest {
  id: unknown;
  method: string;
  url: string;
  headers: Record<string, string | undefined>;
  remoteAddress?: string;
}

/**
 * One log line per request, without credentials: of the request, only its id, method, URL (with
 * query values dropped: a client may put a token in `?access_token=`), client address and user
 * agent are logged — never its headers, so never Authorization or Cookie. Picking these fields
 * also costs less than logging every header and redacting two of them on each line.
 */
export function requestLog(logger: Logger) {
  return pinoHttp({
    logger,
    serializers: {
      req: (req: SerializedRequest) => ({
        id: req.id,
        method: req.method,
        url: withoutQueryValues(req.url),
        remoteAddress: req.remoteAddress,
        userAgent: req.headers['user-agent'],
      }),
    },
  });
}

function withoutQueryValues(url: string): string {
  const [path, query] = url.split('?', 2);
  if (query === undefined) return path;
  const names = query.split('&').map((pair) => pair.split('=', 1)[0]);
  return `${path}?${names.map((name) => `${name}=[Redacted]`).join('&')}`;
}
