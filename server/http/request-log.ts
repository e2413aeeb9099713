import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';

interface SerializedRequest {
  url: string;
  query?: unknown;
  [field: string]: unknown;
}

/**
 * One log line per request, without credentials: the Authorization and Cookie headers are
 * redacted, and query values are dropped (a client may put a token in `?access_token=`).
 */
export function requestLog(logger: Logger) {
  return pinoHttp({
    logger,
    redact: ['req.headers.authorization', 'req.headers.cookie'],
    serializers: {
      req: (req: SerializedRequest) => ({ ...req, url: withoutQueryValues(req.url), query: undefined }),
    },
  });
}

function withoutQueryValues(url: string): string {
  const [path, query] = url.split('?', 2);
  if (query === undefined) return path;
  const names = query.split('&').map((pair) => pair.split('=', 1)[0]);
  return `${path}?${names.map((name) => `${name}=[Redacted]`).join('&')}`;
}
