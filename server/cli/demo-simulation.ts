import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApiClient, type components } from '../../generated/client.js';
import { createApp } from '../app';
import type { Storage } from '../storage/database';
import { setClock } from '../storage/values';

type IngestRequest = components['schemas']['IngestRequest'];
type Client = ReturnType<typeof createApiClient>;

export const DEMO_EXPERIMENT = 'checkout_redesign';

/** What each simulated visitor does, by variant: the redesign lifts purchases from 10 % to 12 % and leaves add-to-cart alone. */
const PURCHASE_RATE: Record<string, number> = { control: 0.1, redesign: 0.12 };
const ADD_TO_CART_RATE = 0.3;
/** What a purchase brings, in euros: a basket of 20 to 120, the same in both variants (revenue per visitor follows the purchase rate). */
const BASKET = { least: 20, spread: 100 };
const BATCH = 500;

export interface Simulation {
  participants: number;
  days: number;
  /** Called after each batch with how many participants are done. */
  progress(done: number): void;
}

/**
 * Plays an experiment of the last `days` days, up to now, through the service's real ingest path: an
 * app of this process on a port of its own, on the given storage, on a clock that walks through
 * the simulated days — so enrolments, conversions and the daily roll-up carry those days.
 */
export async function simulate(storage: Storage, team: { id: number; token: string; ingestKey: string }, simulation: Simulation, random: () => number): Promise<void> {
  const span = simulation.days * 86_400_000;
  const first = Date.now() - span;
  let simulated = first;
  const restoreClock = setClock(() => new Date(simulated));
  const app = createApp({ storage, logger: pino({ level: 'silent' }), validateResponses: false, rateLimit: { enabled: false, windowSeconds: 60, perCredential: 1, perAddress: 1 } });
  const listener = app.listen(0, '127.0.0.1');
  try {
    await new Promise((resolve) => listener.once('listening', resolve));
    const baseUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    const api = createApiClient(baseUrl, team.token);
    await setUp(api, team.id);
    const ingest = createApiClient(baseUrl, team.ingestKey);
    // Two hours of visitors per batch, so that each day gets its share
    const perBatch = Math.min(BATCH, Math.ceil(simulation.participants / (simulation.days * 12)));
    for (let done = 0; done < simulation.participants; ) {
      const size = Math.min(perBatch, simulation.participants - done);
      // Visitors arrive evenly over the days; the last ones now
      simulated = first + ((done + size) / simulation.participants) * span;
      const keys = Array.from({ length: size }, (_, i) => `visitor-${String(done + i + 1).padStart(6, '0')}`);
      const variants = await enrol(ingest, team.id, keys);
      await send(ingest, team.id, behaviour(keys, variants, random));
      done += size;
      simulation.progress(done);
    }
  } finally {
    listener.closeAllConnections();
    await new Promise((resolve) => listener.close(resolve));
    restoreClock();
  }
}

async function setUp(api: Client, team: number): Promise<void> {
  const path = { team };
  const experiment = { team, experiment: DEMO_EXPERIMENT };
  await must(api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'purchase', description: 'Completed a purchase.' } }));
  await must(api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'add_to_cart', type: 'count', description: 'Put an item in the cart.' } }));
  await must(
    api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'revenue', type: 'value', cap: 100, description: 'What a purchase brought, in euros; one basket counts up to 100.' } }),
  );
  await must(api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: DEMO_EXPERIMENT, event: 'purchase', minimum_effect: 0.1, description: 'A one-page checkout against the current three-step one.' } }));
  await must(api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'control', control: true, description: 'The three-step checkout.' } }));
  await must(api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: experiment }, body: { key: 'redesign', description: 'The one-page checkout.' } }));
  await must(api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: experiment } }));
}

/** Enrols the visitors (the service assigns their variants) and answers each one's variant. */
async function enrol(ingest: Client, team: number, keys: string[]): Promise<string[]> {
  const outcomes = await send(ingest, team, keys.map((participant) => ({ participant, experiment: DEMO_EXPERIMENT })));
  return outcomes.map((outcome) => outcome.data!.assignments[0]!.variant);
}

/** What the visitors then do: some put items in the cart (count event), some buy (and bring revenue, a value event). */
function behaviour(keys: string[], variants: string[], random: () => number): IngestRequest[] {
  return keys.flatMap((participant, i) => {
    const events: IngestRequest[] = [];
    if (random() < ADD_TO_CART_RATE) {
      const items = 1 + Math.floor(random() * 3);
      for (let n = 0; n < items; n++) events.push({ participant, experiment: DEMO_EXPERIMENT, event: 'add_to_cart' });
    }
    if (random() < PURCHASE_RATE[variants[i]!]!) {
      events.push({ participant, experiment: DEMO_EXPERIMENT, event: 'purchase' });
      const euros = Math.round((BASKET.least + random() * BASKET.spread) * 100) / 100;
      events.push({ participant, experiment: DEMO_EXPERIMENT, event: 'revenue', value: euros });
    }
    return events;
  });
}

async function send(ingest: Client, team: number, items: IngestRequest[]) {
  const outcomes = [];
  for (let start = 0; start < items.length; start += BATCH) {
    const answer = await must(ingest.POST('/api/teams/{team}/ingest/batch', { params: { path: { team } }, body: { items: items.slice(start, start + BATCH) } }));
    const failed = answer.data.find((outcome) => outcome.status !== 200);
    if (failed) throw new Error(`An ingest of the demo answered ${failed.status}: ${failed.error?.detail}`);
    outcomes.push(...answer.data);
  }
  return outcomes;
}

async function must<T>(call: Promise<{ data?: T; error?: { detail?: string }; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new Error(`${response.url} answered ${response.status}: ${error?.detail ?? ''}`);
  return data!;
}
