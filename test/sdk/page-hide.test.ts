// The SDK in a page that is hidden or left: what is queued goes out at once with `keepalive`,
// within the 64 KiB browsers allow such requests. The page's globals (window events, document)
// are stand-ins set for this file only (it runs isolated); the network is an injected fetch.
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from 'experimentation-api/sdk';

type Listener = () => void;

function fakePage() {
  const windowListeners = new Map<string, Listener>();
  const documentListeners = new Map<string, Listener>();
  const document = {
    visibilityState: 'visible',
    addEventListener: (type: string, listener: Listener) => documentListeners.set(type, listener),
    removeEventListener: (type: string) => documentListeners.delete(type),
  };
  Object.assign(globalThis, {
    document,
    addEventListener: (type: string, listener: Listener) => windowListeners.set(type, listener),
    removeEventListener: (type: string) => windowListeners.delete(type),
  });
  return { document, windowListeners, documentListeners };
}

afterEach(() => {
  const page = globalThis as { document?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  delete page.document;
  delete page.addEventListener;
  delete page.removeEventListener;
});

describe('the SDK in a page', () => {
  it('when the page is hidden, then the queue goes out with keepalive in a body of at most 60 KiB, from its first item; and again when it is left', async () => {
    // Arrange: 400 events of long participant keys (about 130 KiB), none sent yet.
    const page = fakePage();
    const posts: Array<{ keepalive: boolean | undefined; bytes: number; participants: string[] }> = [];
    const client = createClient({
      baseUrl: 'http://service.test',
      team: 1,
      ingestKey: 'ik_page',
      stream: false,
      pollIntervalMs: 3_600_000,
      flushIntervalMs: 3_600_000,
      fetch: async (input, init) => {
        if (String(input).endsWith('/ingest/batch')) {
          const body = String(init?.body);
          posts.push({ keepalive: init?.keepalive, bytes: new TextEncoder().encode(body).length, participants: JSON.parse(body).items.map((item: { participant: string }) => item.participant) });
        }
        return new Response(null, { status: 503 });
      },
    });
    const participants = Array.from({ length: 400 }, (_, i) => `${String(i).padStart(4, '0')}-${'x'.repeat(250)}`);
    for (const participant of participants) client.track(participant, 'purchase');
    expect(posts).toEqual([]);

    // Act
    page.document.visibilityState = 'hidden';
    page.documentListeners.get('visibilitychange')!();
    page.windowListeners.get('pagehide')!();

    // Assert
    expect(posts).toHaveLength(2);
    for (const post of posts) {
      expect(post.keepalive).toBe(true);
      expect(post.bytes).toBeLessThanOrEqual(60 * 1024);
      expect(post.participants.length).toBeGreaterThan(100);
      expect(post.participants).toEqual(participants.slice(0, post.participants.length));
    }
    expect(client.stats().queued).toBe(400);
    await client.close({ timeoutMs: 0 });
    expect(page.windowListeners.size + page.documentListeners.size).toBe(0);
  });
});
