// What the SDK tests share: a team's checkout experiment and banner flag, a record of what a
// test did through the SDK, and the statistics that record implies.
import { expect } from 'vitest';
import type { Client } from './team';

export const EXPERIMENT = 'checkout';
export const FLAG = 'banner';
export const EVENT = 'purchase';

/**
 * A count event `purchase`; a running experiment `checkout` (coverage 80 %, so that some
 * participants get no variant) with `control` and `treatment`; a flag `banner` serving `new`
 * to checkout's treatment and `old` otherwise.
 */
export async function arrangeCheckout(api: Client, team: number): Promise<void> {
  const path = { team };
  const steps = [
    await api.POST('/api/teams/{team}/events', { params: { path }, body: { key: EVENT, type: 'count' } }),
    await api.POST('/api/teams/{team}/experiments', { params: { path }, body: { key: EXPERIMENT, event: EVENT, coverage: 80 } }),
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: EXPERIMENT } }, body: { key: 'control', control: true } }),
    await api.POST('/api/teams/{team}/experiments/{experiment}/variants', { params: { path: { ...path, experiment: EXPERIMENT } }, body: { key: 'treatment' } }),
    await api.POST('/api/teams/{team}/experiments/{experiment}/start', { params: { path: { ...path, experiment: EXPERIMENT } } }),
    await api.POST('/api/teams/{team}/features', {
      params: { path },
      body: { key: FLAG, enabled: true, value: 'old', rules: [{ type: 'experiment', experiment: EXPERIMENT, variants: { treatment: 'new' } }] },
    }),
  ];
  for (const step of steps) {
    if (step.response.status !== 200) throw new Error(`arranging checkout failed: ${step.response.status} ${JSON.stringify(step.error)}`);
  }
}

/** Per participant: the variant the SDK chose (null: none, undefined: never evaluated) and how many events it tracked. */
export type Journal = Map<string, { variant?: string | null; tracked: number }>;

export function note(journal: Journal, participant: string, change: { variant?: string | null; tracked?: number }): void {
  const entry = journal.get(participant) ?? { tracked: 0 };
  if (change.variant !== undefined) entry.variant = change.variant;
  entry.tracked += change.tracked ?? 0;
  journal.set(participant, entry);
}

/**
 * What the service must count: a participant is in the variant its exposure named; its events
 * count there; events of participants never exposed count nowhere (and enrol them nowhere).
 */
export function expectedStatistics(journal: Journal): { [variant: string]: { participants: number; conversions: number; unique: number } } {
  const expected: ReturnType<typeof expectedStatistics> = { control: { participants: 0, conversions: 0, unique: 0 }, treatment: { participants: 0, conversions: 0, unique: 0 } };
  for (const { variant, tracked } of journal.values()) {
    if (!variant) continue;
    expected[variant]!.participants++;
    expected[variant]!.conversions += tracked;
    if (tracked > 0) expected[variant]!.unique++;
  }
  return expected;
}

export async function servedStatistics(api: Client, team: number): Promise<ReturnType<typeof expectedStatistics>> {
  const served: ReturnType<typeof expectedStatistics> = {};
  for (const variant of ['control', 'treatment']) {
    const { data, response } = await api.GET('/api/teams/{team}/experiments/{experiment}/variants/{variant}/statistics', {
      params: { path: { team, experiment: EXPERIMENT, variant } },
    });
    expect(response.status).toBe(200);
    const event = data!.data.events.find((e) => e.event === EVENT)!;
    served[variant] = { participants: data!.data.participants, conversions: event.conversions, unique: event.unique_conversions };
  }
  return served;
}

/** How many participants the team has stored. */
export async function participantsCount(api: Client, team: number): Promise<number> {
  const { data } = await api.GET('/api/teams/{team}', { params: { path: { team } } });
  return data!.data.participants_count;
}
