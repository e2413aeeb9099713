/** Looks up every hash of a batch in one query: what each found, by hash. */
export type LookupMany<Row> = (hashes: string[]) => Promise<Map<string, Row>>;

/**
 * PostgreSQL: the credential lookups of one turn of the event loop in one query, sent once the
 * requests that arrived together have all asked (setImmediate) — never earlier, so each request
 * still sees the credential as stored when it arrived, and a key rotated or a token revoked
 * before it is refused. A query costs the server and the database more than looking up one
 * more key in it, and an SDK's requests all carry the same credential (bench/results/2026-11-27-postgres-one-round-trip.md). A
 * lookup that fails fails every request of its batch.
 */
export function batchedLookup<Row>(lookupMany: LookupMany<Row>): (hash: string) => Promise<Row | undefined> {
  let waiting: Map<string, Array<{ resolve: (row: Row | undefined) => void; reject: (error: unknown) => void }>> | undefined;
  const send = () => {
    const batch = waiting!;
    waiting = undefined;
    lookupMany([...batch.keys()]).then(
      (found) => {
        for (const [hash, callers] of batch) for (const { resolve } of callers) resolve(found.get(hash));
      },
      (error: unknown) => {
        for (const callers of batch.values()) for (const { reject } of callers) reject(error);
      },
    );
  };
  return (hash) =>
    new Promise((resolve, reject) => {
      if (!waiting) {
        waiting = new Map();
        setImmediate(send);
      }
      let callers = waiting.get(hash);
      if (!callers) waiting.set(hash, (callers = []));
      callers.push({ resolve, reject });
    });
}
