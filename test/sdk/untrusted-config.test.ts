// The SDK does not trust what it is sent as a config: the real server's config, then, through the
// SDK's `fetch` option, what a broken or hostile config server could send instead — a body larger
// than any config, configs that are not the contract's shape. The SDK reads no more than its
// bound, keeps deciding from the last good config, reports each refusal, and never throws into
// the application.
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client, type Config, type SdkError } from 'experimentation-api/sdk';
import { useServer } from '../support/server';
import { arrangeCheckout, EXPERIMENT, FLAG } from '../support/sdk';
import type { TestTeam } from '../support/team';

const MAX_CONFIG_CHARACTERS = 16 * 1024 * 1024;
const CHUNK = 64 * 1024;
const PARTICIPANTS = Array.from({ length: 200 }, (_, i) => `visitor-${i}`);

/** What the service's answer is replaced with once the SDK has its first config; undefined: the service's own. */
type Replacement = (served: { data: Config }) => Response;

/** An SDK that polls every 20 ms, whose config polls after the first are answered by `replace()` when it gives one. */
async function pollingClient(baseUrl: string, team: TestTeam, replace: () => Replacement | undefined) {
  const errors: SdkError[] = [];
  const client = createClient({
    baseUrl,
    team: team.id,
    ingestKey: team.ingestKey,
    stream: false,
    pollIntervalMs: 20,
    flushIntervalMs: 3_600_000,
    onError: (error) => errors.push(error),
    fetch: async (input, init) => {
      const replacement = String(input).endsWith('/config') ? replace() : undefined;
      if (!replacement) return fetch(input, init);
      const served = await fetch(input, { ...init, headers: { Authorization: `Bearer ${team.ingestKey}` } });
      return replacement((await served.json()) as { data: Config });
    },
  });
  await client.ready();
  return { client, errors };
}

/** Every decision the SDK makes for the participants, flag and experiment. */
function decisions(client: Client): Array<[unknown, unknown]> {
  return PARTICIPANTS.map((participant) => [client.experiment(EXPERIMENT, participant), client.feature(FLAG, participant)]);
}

function configReports(errors: SdkError[]): string[] {
  return errors.flatMap((error) => (error.kind === 'config' ? [error.message] : []));
}

describe('the SDK given a config it cannot trust', () => {
  const server = useServer('sqlite');
  let team: TestTeam;

  beforeAll(async () => {
    team = await server().newTeam();
    await arrangeCheckout(team.api, team.id);
  });

  it('when a poll answers a body longer than 16 Mi characters, then the SDK stops reading it past the bound, reports it, and keeps the last good config', async () => {
    // Arrange: a valid config padded with spaces to 20 Mi characters, produced only as it is read.
    const produced = { characters: 0, cancelled: false };
    let once: Replacement | undefined;
    const { client, errors } = await pollingClient(server().baseUrl, team, () => {
      const replacement = once;
      once = undefined;
      return replacement;
    });
    const good = client.config();
    const before = decisions(client);

    // Act: the next poll gets the padded body.
    once = paddedTo(20 * 1024 * 1024, produced);

    // Assert
    await expect.poll(() => configReports(errors).find((message) => message.includes('more than 16777216 characters')), { timeout: 30_000 }).toBeDefined();
    expect(produced.cancelled).toBe(true);
    expect(produced.characters).toBeLessThanOrEqual(MAX_CONFIG_CHARACTERS + 3 * CHUNK);
    expect(client.config()).toEqual(good);
    expect(decisions(client)).toEqual(before);
    await client.close();
  });

  const broken: Array<[string, (config: Record<string, any>) => unknown, string]> = [
    ["an experiment's variants are null", (config) => (config.experiments[0].variants = null), '/experiments/0/variants must be an array'],
    ['a variant has no traffic', (config) => delete config.experiments[0].variants[1].traffic, '/experiments/0/variants/1/traffic must be a number'],
    ["an experiment rule's variants are null", (config) => (config.features[0].rules[0].variants = null), '/features/0/rules/0/variants must be an object'],
    ['an exclusion group is empty', (config) => (config.experiments[0].exclusion_group = {}), '/experiments/0/exclusion_group/key must be a string'],
    ['the features are null', (config) => (config.features = null), '/features must be an array'],
    ['the hash version is unknown', (config) => (config.experiments[0].hash_version = 3), '/experiments/0/hash_version must be 1 or 2'],
  ];

  it.each(broken)('when a polled config is not the contract\'s shape (%s), then the SDK reports where, keeps deciding from the last good config without throwing, and takes the next good one', async (_, breakIt, where) => {
    // Arrange
    let tamper = false;
    const { client, errors } = await pollingClient(server().baseUrl, team, () =>
      tamper
        ? (served) => {
            breakIt(served.data as Record<string, any>);
            return Response.json(served, { headers: { ETag: '"tampered"' } });
          }
        : undefined,
    );
    const good = client.config();
    const before = decisions(client);

    // Act
    tamper = true;
    await expect.poll(() => configReports(errors), { timeout: 30_000 }).toContainEqual(expect.stringContaining(where));

    // Assert: the last good config decides, and no decision throws.
    expect(client.config()).toEqual(good);
    expect(decisions(client)).toEqual(before);
    expect(errors.filter((error) => error.kind !== 'config')).toEqual([]);

    // Act + Assert: the service's next config is taken.
    tamper = false;
    const disabled = await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: FLAG } }, body: { enabled: false } });
    expect(disabled.response.status).toBe(200);
    await expect.poll(() => client.config()?.features[0]?.enabled, { timeout: 30_000 }).toBe(false);
    await client.close();
    await team.api.PUT('/api/teams/{team}/features/{feature}', { params: { path: { team: team.id, feature: FLAG } }, body: { enabled: true } });
  });

  it('when an application passes a participant that is not a string, then the decision is null and reported, not thrown', async () => {
    // Arrange
    const { client, errors } = await pollingClient(server().baseUrl, team, () => undefined);
    const participant = Symbol('not a key') as unknown as string;

    // Act
    const variant = client.experiment(EXPERIMENT, participant);
    const value = client.feature(FLAG, participant);

    // Assert
    expect([variant, value]).toEqual([null, null]);
    expect(errors.filter((error) => error.kind === 'decision')).toEqual([
      { kind: 'decision', key: EXPERIMENT, message: expect.stringContaining('TypeError') },
      { kind: 'decision', key: FLAG, message: expect.stringContaining('TypeError') },
    ]);
    await client.close();
  });
});

/** A 200 whose body is `{"data": …}` with the served config, padded with spaces to `length` characters; `produced` counts what was pulled from it. */
function paddedTo(length: number, produced: { characters: number; cancelled: boolean }): Replacement {
  return (served) => {
    const head = new TextEncoder().encode(`{"data":${JSON.stringify(served.data)}`);
    const padding = new TextEncoder().encode(' '.repeat(CHUNK));
    function* parts() {
      yield head;
      for (let left = length - head.length - 1; left > 0; left -= CHUNK) yield padding.subarray(0, Math.min(CHUNK, left));
      yield new TextEncoder().encode('}');
    }
    const source = parts();
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const { done, value } = source.next();
        if (done) return controller.close();
        produced.characters += value.length;
        controller.enqueue(value);
      },
      cancel() {
        produced.cancelled = true;
      },
    });
    return new Response(body, { headers: { 'Content-Type': 'application/json', ETag: '"padded"' } });
  };
}
