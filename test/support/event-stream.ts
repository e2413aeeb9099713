import { eventsOf as messagesOf } from '../../verify/contract';

/** A message of a Server-Sent Events stream: its fields (`event`, `id`, `data`, `retry`), comments left out. */
export type StreamMessage = Record<string, string>;

export { messagesOf };

/**
 * An open stream read in the background: what arrived so far (`text`, `messages()`, the
 * `configs()` sent), and whether the server ended it — for expect.poll to wait on.
 */
export class StreamReader {
  text = '';
  ended = false;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly done: Promise<void>;

  constructor(readonly response: Response) {
    this.#reader = response.body!.getReader();
    this.done = this.#pump();
  }

  async #pump(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done) break;
        this.text += decoder.decode(value, { stream: true });
      }
    } catch {
      // cancelled by close(), or the connection was cut
    }
    this.ended = true;
  }

  messages(): StreamMessage[] {
    return messagesOf(this.text);
  }

  /** The `config` messages: their `id` and the parsed `data`. */
  configs(): Array<{ id: string; data: any }> {
    return this.messages()
      .filter((message) => message.event === 'config')
      .map((message) => ({ id: message.id!, data: JSON.parse(message.data!) }));
  }

  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
    await this.done;
  }
}

/** GETs the team's config stream with `credential`; the reader when the answer is a stream, else the answer with its body read. */
export async function openConfigStream(baseUrl: string, team: number, credential: string, headers: Record<string, string> = {}): Promise<{ response: Response; stream?: StreamReader; body?: string }> {
  const response = await fetch(`${baseUrl}/api/teams/${team}/config/stream`, { headers: { authorization: `Bearer ${credential}`, ...headers } });
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return { response, stream: new StreamReader(response) };
  return { response, body: await response.text() };
}

/** An answer's body, or, for an event stream (which never ends), what came until its first complete message. */
export async function bodyOrFirstMessage(response: Response): Promise<string> {
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response.text();
  const stream = new StreamReader(response);
  while (!stream.ended && !stream.text.includes('\n\n')) await new Promise((resolve) => setTimeout(resolve, 10));
  await stream.close();
  return stream.text;
}
