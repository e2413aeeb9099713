// The SDK (experimentation-api/sdk, the bundled file consumers get) against the real server on
// each engine: decisions, exposures and events counted as tracked, flush/close, refusals, the
// config kept fresh.
import { describe, expect, it } from 'vitest';
import { createClient, type ClientOptions, type SdkError } from 'experimentation-api/sdk';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { freePort } from '../support/process';
import { arrangeCheckout, EVENT, expectedStatistics, EXPERIMENT, FLAG, note, participantsCount, servedStatistics, type Journal } from '../support/sdk';
import type { TestServer } from '../support/server';
import type { TestTeam } from '../support/team';

function clientFor(server: TestServer, team: TestTeam, errors: SdkError[], options: Partial<ClientOptions> = {}) {
  return createClient({ baseUrl: server.baseUrl, team: team.id, ingestKey: team.ingestKey, onError: (error) => errors.push(error), ...options });
}

/** What delivery reported (the config's reports are about the stream's and the polls' availability). */
function deliveryErrors(errors: SdkError[]): SdkError[] {
  return errors.filter((error) => error.kind !== 'config');
}

/** A fetch that records what the SDK asked of the config and, when told, answers the stream as a network failure would. */
function watchedFetch(options: { refuseStream?: boolean } = {}) {
  const calls: Array<{ url: string; status?: number; signal?: AbortSignal | null }> = [];
  const watched: typeof fetch = async (input, init) => {
    const url = String(input);
    const call: (typeof calls)[number] = { url, signal: init?.signal };
    if (url.includes('/config')) calls.push(call);
    if (options.refuseStream && url.endsWith('/config/stream')) throw new TypeError('fetch failed');
    const response = await fetch(input, init);
    call.status = response.status;
    return response;
  };
  return { fetch: watched, calls };
}

describe.each(engines)('the SDK on %s', (engine) => {
  const server = useServer(engine);

  it('when 10 000 participants are evaluated and tracked through it, then the statistics served are those the tracked items imply, each counted once', { timeout: 300_000 }, async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
    const errors: SdkError[] = [];
    const client = clientFor(server(), team, errors, { maxQueue: 50_000 });
    await client.ready();
    const journal: Journal = new Map();
    let items = 0;
    let inconsistent = 0;

    // Act: every participant is evaluated twice (experiment and flag, in both orders); some are
    // tracked once or twice; some visitors are tracked without ever being evaluated. All in one
    // synchronous burst, hence a queue bound above the 17 500 items.
    for (let i = 0; i < 10_000; i++) {
      const participant = `visitor-${i}`;
      const attributes = i % 3 === 0 ? { country: 'DE' } : undefined;
      const [variant, banner] =
        i % 2 === 0
          ? [client.experiment(EXPERIMENT, participant, attributes), client.feature(FLAG, participant, attributes)]
          : [client.feature(FLAG, participant, attributes), client.experiment(EXPERIMENT, participant, attributes)].reverse();
      if (banner !== (variant === 'treatment' ? 'new' : 'old')) inconsistent++;
      note(journal, participant, { variant });
      if (variant) items++;
      const tracked = i % 4 === 0 ? 2 : i % 4 === 1 ? 1 : 0;
      for (let t = 0; t < tracked; t++) client.track(participant, EVENT);
      note(journal, participant, { tracked });
      items += tracked;
    }
    for (let i = 0; i < 500; i++) {
      client.track(`lurker-${i}`, EVENT);
      note(journal, `lurker-${i}`, { tracked: 1 });
      items++;
    }
    await client.close();

    // Assert
    expect(inconsistent).toBe(0);
    expect(deliveryErrors(errors)).toEqual([]);
    expect(client.stats()).toMatchObject({ queued: 0, delivered: items, rejected: 0, dropped: 0 });
    const expected = expectedStatistics(journal);
    expect(expected.control!.participants + expected.treatment!.participants).toBeGreaterThan(7_000);
    expect(await servedStatistics(team.api, team.id)).toEqual(expected);
    const sent = [...journal.values()].filter((entry) => entry.variant || entry.tracked > 0).length;
    expect(await participantsCount(team.api, team.id)).toBe(sent);
    console.log(`[sdk ${engine}] ${items} items from 10 500 participants, stored as`, JSON.stringify(expected));
  });

  it('when flush() resolves, then every item queued before it is stored and counted', async () => {
    // Arrange: no interval flush within the test, so only flush() sends.
    const team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
    const errors: SdkError[] = [];
    const client = clientFor(server(), team, errors, { flushIntervalMs: 3_600_000, batchSize: 200 });
    await client.ready();
    const journal: Journal = new Map();
    for (let i = 0; i < 1_000; i++) {
      const participant = `shopper-${i}`;
      note(journal, participant, { variant: client.experiment(EXPERIMENT, participant), tracked: 1 });
      client.track(participant, EVENT);
    }

    // Act
    await client.flush();

    // Assert: at once, without waiting for anything else.
    expect(await servedStatistics(team.api, team.id)).toEqual(expectedStatistics(journal));
    expect(client.stats().queued).toBe(0);
    await client.close();
    expect(deliveryErrors(errors)).toEqual([]);
  });

  it('when items are refused (unknown event 404, a value on a count event 409, a malformed key 400), then each is reported to onError and dropped, and the others are stored', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
    const errors: SdkError[] = [];
    const client = clientFor(server(), team, errors, { flushIntervalMs: 3_600_000 });
    await client.ready();
    const journal: Journal = new Map();
    const exposed = (participant: string) => note(journal, participant, { variant: client.experiment(EXPERIMENT, participant) });

    // Act
    for (const participant of ['a1', 'a2', 'a3']) exposed(participant);
    client.track('a1', 'no_such_event');
    client.track('a2', EVENT, 9.99);
    client.track('has space', EVENT);
    client.track('a3', EVENT);
    note(journal, 'a3', { tracked: 1 });
    await client.flush();

    // Assert
    const rejected = deliveryErrors(errors).map((error) => (error.kind === 'rejected' ? [error.status, error.item.participant, error.item.event] : error));
    expect(rejected).toEqual([
      [400, 'has space', EVENT],
      [404, 'a1', 'no_such_event'],
      [409, 'a2', EVENT],
    ]);
    expect(client.stats()).toMatchObject({ queued: 0, rejected: 3, delivered: [...journal.values()].filter((e) => e.variant).length + 1 });
    expect(await servedStatistics(team.api, team.id)).toEqual(expectedStatistics(journal));
    await client.close();
  });

  it('when close() is called, then what was queued is stored, later calls queue nothing, and the config requests end', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
    const errors: SdkError[] = [];
    const watched = watchedFetch();
    const client = clientFor(server(), team, errors, { flushIntervalMs: 3_600_000, fetch: watched.fetch });
    await client.ready();
    const journal: Journal = new Map();
    for (let i = 0; i < 50; i++) note(journal, `reader-${i}`, { variant: client.experiment(EXPERIMENT, `reader-${i}`) });

    // Act
    await client.close();
    client.track('reader-0', EVENT);

    // Assert
    expect(await servedStatistics(team.api, team.id)).toEqual(expectedStatistics(journal));
    expect(client.stats().queued).toBe(0);
    expect(deliveryErrors(errors)).toEqual([]);
    expect(watched.calls.length).toBeGreaterThan(0);
    expect(watched.calls.every((call) => call.signal?.aborted)).toBe(true);
  });

  it('when a flag is flipped through the API, then the config stream brings it to the SDK, with no poll and no second connection', async () => {
    // Arrange: polls an hour apart, so that only the stream can bring the change in time.
    const team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
    const errors: SdkError[] = [];
    const watched = watchedFetch();
    const client = clientFor(server(), team, errors, { pollIntervalMs: 3_600_000, fetch: watched.fetch });
    await client.ready();
    const participant = Array.from({ length: 100 }, (_, i) => `streamer-${i}`).find((p) => client.experiment(EXPERIMENT, p) === 'treatment')!;
    expect(client.feature(FLAG, participant)).toBe('new');

    // Act
    const updated = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: FLAG } }, body: { enabled: false } });
    expect(updated.response.status).toBe(200);

    // Assert
    await expect.poll(() => client.feature(FLAG, participant), { timeout: 10_000 }).toBeNull();
    expect(watched.calls.map((call) => [new URL(call.url).pathname.replace(/^.*\/config/, 'config'), call.status])).toEqual([['config/stream', 200]]);
    await client.close();
    expect(errors).toEqual([]);
    expect(watched.calls[0]!.signal?.aborted).toBe(true);
  });

  it('when the stream is unavailable, then config changes reach the SDK by polling, and unchanged polls are 304', async () => {
    // Arrange
    const team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
    const errors: SdkError[] = [];
    const watched = watchedFetch({ refuseStream: true });
    const client = clientFor(server(), team, errors, { pollIntervalMs: 100, retryBaseMs: 100, maxRetryDelayMs: 400, fetch: watched.fetch });
    await client.ready();
    const participant = Array.from({ length: 100 }, (_, i) => `poller-${i}`).find((p) => client.experiment(EXPERIMENT, p) === 'treatment')!;
    expect(client.feature(FLAG, participant)).toBe('new');
    await expect.poll(() => watched.calls.filter((call) => call.status === 304).length).toBeGreaterThan(0);

    // Act
    const updated = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: FLAG } }, body: { enabled: false } });
    expect(updated.response.status).toBe(200);

    // Assert
    await expect.poll(() => client.feature(FLAG, participant), { timeout: 10_000 }).toBeNull();
    await client.close();
    expect(errors.every((error) => error.kind === 'config')).toBe(true);
  });
});

describe('the SDK with credentials the service refuses', () => {
  const server = useServer('sqlite');

  it('when the ingest key is wrong, then ready() rejects, and the refusal is reported', async () => {
    const team = await server().newTeam();
    const errors: SdkError[] = [];
    const client = clientFor(server(), { ...team, ingestKey: 'ik_not_a_key' }, errors);

    await expect(client.ready()).rejects.toThrow(/refused the ingest key \(401\)/);

    expect(errors).toContainEqual(expect.objectContaining({ kind: 'config', status: 401 }));
    await client.close();
  });
});

describe('the SDK while the service is down', () => {
  it('when more is tracked than the queue holds, then the queue stays at its bound, the rest is dropped, counted and reported, and close() abandons what is left', async () => {
    // Arrange: nobody listens at the address.
    const errors: SdkError[] = [];
    const client = createClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      team: 1,
      ingestKey: 'ik_nobody',
      maxQueue: 1_000,
      retryBaseMs: 50,
      maxRetryDelayMs: 200,
      onError: (error) => errors.push(error),
    });

    // Act
    for (let i = 0; i < 5_000; i++) client.track(`visitor-${i}`, EVENT);

    // Assert
    expect(client.stats()).toMatchObject({ queued: 1_000, dropped: 4_000, delivered: 0 });
    await expect.poll(() => errors.filter((error) => error.kind === 'dropped').reduce((sum, error) => sum + (error.kind === 'dropped' ? error.count : 0), 0)).toBe(4_000);
    await expect.poll(() => client.stats().retries).toBeGreaterThan(1);
    await client.close({ timeoutMs: 0 });
    const abandoned = errors.find((error) => error.kind === 'abandoned');
    expect(abandoned?.kind === 'abandoned' && abandoned.items.map((item) => item.participant)).toEqual(Array.from({ length: 1_000 }, (_, i) => `visitor-${i}`));
    expect(client.stats().queued).toBe(0);
  });
});
