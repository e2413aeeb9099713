import { HttpError, RETRY_AFTER_SECONDS, ServiceUnavailable } from '../http/errors';
import type { ConfigStreamSettings } from '../settings/settings';

/** 429: the credential holds as many open config streams as it may. Nothing was opened. */
export class TooManyStreams extends HttpError {
  constructor(limit: number, name: string) {
    super(
      429,
      'Too Many Requests',
      'too-many-streams',
      `This credential already holds ${limit} open ${name} on this server; close one or retry in ${RETRY_AFTER_SECONDS} s.`,
      undefined,
      { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    );
  }
}

/** What a stream must do when the server ends it. */
export interface OpenStream {
  end(): void;
}

/**
 * The streams of one kind this process holds open (config streams, OFREP event streams), bounded
 * per credential and in all; `endAll` ends every one of them (at shutdown) and refuses new ones
 * from then on.
 */
export class ConfigStreams {
  readonly #open = new Set<OpenStream>();
  readonly #perCredential = new Map<string, number>();
  #ended = false;

  constructor(
    readonly settings: ConfigStreamSettings,
    /** What the streams are called in refusals. */
    readonly name = 'config streams',
  ) {}

  get size(): number {
    return this.#open.size;
  }

  /** Counts a stream of the credential (by its hash) in, or throws 429 / 503; the returned function counts it out. */
  admit(credentialHash: string, stream: OpenStream): () => void {
    if (this.#ended) throw new ServiceUnavailable('This process is shutting down; nothing was done. Retry (another process may answer).');
    const held = this.#perCredential.get(credentialHash) ?? 0;
    if (held >= this.settings.perCredential) throw new TooManyStreams(this.settings.perCredential, this.name);
    if (this.#open.size >= this.settings.perProcess) {
      throw new ServiceUnavailable(`This server holds as many ${this.name} as it may (${this.settings.perProcess}); retry, or poll meanwhile.`);
    }
    this.#open.add(stream);
    this.#perCredential.set(credentialHash, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open.delete(stream);
      const left = (this.#perCredential.get(credentialHash) ?? 1) - 1;
      if (left > 0) this.#perCredential.set(credentialHash, left);
      else this.#perCredential.delete(credentialHash);
    };
  }

  endAll(): void {
    this.#ended = true;
    for (const stream of [...this.#open]) stream.end();
  }
}
