import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { publicAddresses, RefusedUrl } from './addresses';
import { signedHeaders } from './signature';

/** At most this much of a receiver's answer is read (the rest is dropped with the connection). */
export const ANSWER_CAP_BYTES = 64 * 1024;

/**
 * Connections are kept open between deliveries to one host and port. A kept connection was made
 * to an address checked then, and every attempt checks the host's current addresses before it is
 * sent, on a kept connection or a new one.
 */
const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };

export interface Attempt {
  url: string;
  /** The endpoint's secret, and its previous one while that still signs. */
  secrets: string[];
  messageId: string;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
}

/** How an attempt ended: the receiver's status (null when none came) and, unless it was a 2xx, what went wrong. */
export interface AttemptOutcome {
  status: number | null;
  error: string | null;
}

/**
 * POSTs one signed delivery. The host is resolved and checked here, at delivery time, and the
 * connection is made to the very address checked (so a name re-pointed at a private address after
 * the endpoint was created is refused). No redirect is followed; the whole exchange is bounded by
 * `timeoutMs`; at most ANSWER_CAP_BYTES of the answer are read.
 */
export async function send(attempt: Attempt): Promise<AttemptOutcome> {
  const url = new URL(attempt.url);
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await publicAddresses(url.hostname, attempt.allowPrivate);
  } catch (error) {
    return { status: null, error: error instanceof RefusedUrl ? `refused: ${error.message}` : (error as Error).message };
  }
  const [first] = addresses as [{ address: string; family: number }];
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) (callback as unknown as (error: null, all: typeof addresses) => void)(null, [first]);
    else callback(null, first.address, first.family);
  };
  const headers = {
    ...signedHeaders(attempt.secrets, attempt.messageId, Math.floor(Date.now() / 1000), attempt.body),
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(attempt.body)),
    'user-agent': 'experimentation-webhooks/1',
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', headers, lookup: pinned, agent: url.protocol === 'https:' ? agents['https:'] : agents['http:'], signal: AbortSignal.timeout(attempt.timeoutMs) }, (res) => {
      readCapped(res).then(
        (answer) => resolve(outcomeOf(res.statusCode ?? 0, answer)),
        () => resolve(outcomeOf(res.statusCode ?? 0, '')),
      );
    });
    req.on('error', (error) => {
      const timedOut = error.name === 'AbortError' || error.name === 'TimeoutError';
      resolve({ status: null, error: timedOut ? `no answer within ${attempt.timeoutMs / 1000} s` : `${(error as NodeJS.ErrnoException).code ?? error.name}: ${error.message}`.slice(0, 500) });
    });
    req.end(attempt.body);
  });
}

function outcomeOf(status: number, answer: string): AttemptOutcome {
  if (status >= 200 && status < 300) return { status, error: null };
  const what = status >= 300 && status < 400 ? `answered ${status} (redirects are not followed)` : `answered ${status}`;
  const excerpt = answer.trim().slice(0, 200);
  return { status, error: excerpt ? `${what}: ${excerpt}` : what };
}

/** The answer's first ANSWER_CAP_BYTES as text; a longer answer is cut off and its connection closed. */
async function readCapped(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= ANSWER_CAP_BYTES) {
      res.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, ANSWER_CAP_BYTES).toString('utf8');
}
