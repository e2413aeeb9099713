import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApiClient } from '../../generated/client.js';
import { createClient, type Client, type SdkError } from '../../generated/sdk.js';
import { createApp } from '../app';
import type { Storage } from '../storage/database';
import { setClock } from '../storage/values';

type ApiClient = ReturnType<typeof createApiClient>;

export const DEMO_EXPERIMENT = 'checkout_redesign';

/** What each simulated visitor does, by variant: the redesign lifts purchases from 10 % to 12 % and leaves add-to-cart alone. */
const PURCHASE_RATE: Record<string, number> = { control: 0.1, redesign: 0.12 };
/**
 * Returning customers: this share of the visitors bought in the two weeks before their visit, and
 * buy 5.5 times as often as the average visitor; the others less, so that the rates above hold on
 * average. What a regression adjustment (CUPED) on the purchases before exposure narrows.
 */
const RETURNING = 0.15;
const RETURNING_LIFT = 5.5;
const NEWCOMER_LIFT = (1 - RETURNING * RETURNING_LIFT) / (1 - RETURNING);
const DAY = 86_400_000;
const ADD_TO_CART_RATE = 0.3;
/** What a purchase brings, in euros: a basket of 20 to 120, the same in both variants (revenue per visitor follows the purchase rate). */
const BASKET = { least: 20, spread: 100 };
/** At most this many visitors between two flushes. */
const VISITORS_PER_FLUSH = 500;

export interface Simulation {
  participants: number;
  days: number;
  /** Called after each batch with how many participants are done. */
  progress(done: number): void;
}

/**
 * Plays an experiment of the last `days` days, up to now, as an app using the SDK would: an app
 * of this process on a port of its own serves the SDK, on the given storage, on a clock that walks
 * through the simulated days — each two hours of visitors are decided and tracked through the SDK
 * and flushed before the clock moves on, so enrolments, conversions and the daily roll-up carry
 * those days.
 */
export async function simulate(storage: Storage, team: { id: number; token: string; ingestKey: string }, simulation: Simulation, random: () => number): Promise<void> {
  const span = simulation.days * DAY;
  const first = Date.now() - span;
  const arrival = (visitor: number) => first + (visitor / simulation.participants) * span;
  const pasts = pastPurchases(simulation.participants, arrival, random);
  let simulated = pasts[0]?.at ?? first;
  const restoreClock = setClock(() => new Date(simulated));
  const app = createApp({ storage, logger: pino({ level: 'silent' }), validateResponses: false, rateLimit: { enabled: false, windowSeconds: 60, perCredential: 1, perAddress: 1 } });
  const listener = app.listen(0, '127.0.0.1');
  let sdk: Client | undefined;
  try {
    await new Promise((resolve) => listener.once('listening', resolve));
    const baseUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    const api = createApiClient(baseUrl, team.token);
    await createEvents(api, team.id);
    const refusals: string[] = [];
    const failure = (error: SdkError) => (error.kind === 'config' ? undefined : refusals.push(describe(error)));
    // Only flush() sends, so that no item goes out once the clock has moved on; the config does not
    // change while the demo plays, so one read of it is enough.
    sdk = createClient({ baseUrl, team: team.id, ingestKey: team.ingestKey, onError: failure, stream: false, flushIntervalMs: 3_600_000 });
    await sdk.ready();
    // The returning customers' purchases before the experiment starts, two hours at a time
    let past = 0;
    const buyBefore = (until: number) => {
      for (; past < pasts.length && pasts[past]!.at <= until; past++) buy(sdk!, pasts[past]!.visitor, random);
    };
    for (; simulated < first; simulated = Math.min(first, simulated + DAY / 12)) {
      buyBefore(simulated);
      await sdk.flush();
    }
    simulated = first;
    await startExperiment(api, team.id);
    await sdk.close();
    sdk = createClient({ baseUrl, team: team.id, ingestKey: team.ingestKey, onError: failure, stream: false, flushIntervalMs: 3_600_000 });
    await sdk.ready();
    // Two hours of visitors per batch, so that each day gets its share
    const perBatch = Math.min(VISITORS_PER_FLUSH, Math.ceil(simulation.participants / (simulation.days * 12)));
    for (let done = 0; done < simulation.participants; ) {
      const size = Math.min(perBatch, simulation.participants - done);
      // Visitors arrive evenly over the days; the last ones now
      simulated = first + ((done + size) / simulation.participants) * span;
      buyBefore(simulated);
      for (let i = 0; i < size; i++) visit(sdk, done + i + 1, pasts.returning.has(done + i + 1), random);
      await sdk.flush();
      if (refusals.length > 0) throw new Error(`The demo's SDK reported: ${refusals[0]}`);
      done += size;
      simulation.progress(done);
    }
  } finally {
    await sdk?.close({ timeoutMs: 5_000 });
    listener.closeAllConnections();
    await new Promise((resolve) => listener.close(resolve));
    restoreClock();
  }
}

/** The visitors who bought before their visit, each with the moment of that purchase (1 to 13 days before it), in time order. */
function pastPurchases(participants: number, arrival: (visitor: number) => number, random: () => number): Array<{ visitor: number; at: number }> & { returning: Set<number> } {
  const pasts: Array<{ visitor: number; at: number }> = [];
  for (let visitor = 1; visitor <= participants; visitor++) {
    if (random() < RETURNING) pasts.push({ visitor, at: arrival(visitor) - (1 + random() * 12) * DAY });
  }
  pasts.sort((a, b) => a.at - b.at);
  return Object.assign(pasts, { returning: new Set(pasts.map((p) => p.visitor)) });
}

const visitorKey = (visitor: number) => `visitor-${String(visitor).padStart(6, '0')}`;

/** A purchase and what it brought. */
function buy(sdk: Client, visitor: number, random: () => number): void {
  sdk.track(visitorKey(visitor), 'purchase');
  sdk.track(visitorKey(visitor), 'revenue', Math.round((BASKET.least + random() * BASKET.spread) * 100) / 100);
}

async function createEvents(api: ApiClient, team: number): Promise<void> {
  const path = { team };
  await must(api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase', description: 'Completed a purchase.' } }));
  await must(api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'add_to_cart', type: 'count', description: 'Put an item in the cart.' } }));
  await must(
    api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'revenue', type: 'value', cap: 100, description: 'What a purchase brought, in euros; one basket counts up to 100.' } }),
  );
}

async function startExperiment(api: ApiClient, team: number): Promise<void> {
  const path = { team };
  const experiment = { team, experiment: DEMO_EXPERIMENT };
  await must(api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: DEMO_EXPERIMENT, event: 'purchase', minimum_effect: 0.1, description: 'A one-page checkout against the current three-step one.' } }));
  await must(api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'control', control: true, description: 'The three-step checkout.' } }));
  await must(api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'redesign', description: 'The one-page checkout.' } }));
  await must(api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: experiment } }));
}

/**
 * One visitor: the SDK decides its variant (and sends its exposure, which enrols it); some put
 * items in the cart (count event), some buy (and bring revenue, a value event), returning
 * customers more often.
 */
function visit(sdk: Client, visitor: number, returning: boolean, random: () => number): void {
  const participant = visitorKey(visitor);
  const variant = sdk.experiment(DEMO_EXPERIMENT, participant);
  if (variant === null) throw new Error(`The demo's SDK has no variant of ${DEMO_EXPERIMENT} for ${participant}`);
  if (random() < ADD_TO_CART_RATE) {
    const items = 1 + Math.floor(random() * 3);
    for (let n = 0; n < items; n++) sdk.track(participant, 'add_to_cart');
  }
  if (random() < PURCHASE_RATE[variant]! * (returning ? RETURNING_LIFT : NEWCOMER_LIFT)) buy(sdk, visitor, random);
}

function describe(error: SdkError): string {
  if (error.kind === 'rejected') return `an item was refused, ${error.status}: ${error.problem?.detail ?? ''}`;
  if (error.kind === 'dropped') return `${error.count} items were dropped`;
  return `${error.kind}`;
}

async function must<T>(call: Promise<{ data?: T; error?: { detail?: string }; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new Error(`${response.url} answered ${response.status}: ${error?.detail ?? ''}`);
  return data!;
}
