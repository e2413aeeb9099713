// What the OpenFeature provider tests share: a team with a flag for each reason, and a running
// experiment whose flag records exposures.
import type { TestTeam } from './team';
import { arrangeCheckout } from './sdk';

/**
 * Besides checkout (support/sdk.ts: the `banner` flag, an experiment rule serving `new` to
 * checkout's treatment): a value event `revenue`, and a flag per reason —
 * `static_bool` (no rules: STATIC), `plan_label` (a force rule for plan pro: TARGETING_MATCH,
 * else DEFAULT), `rollout_limit` (a 100 % rollout: SPLIT), `layout` (disabled: DISABLED), and
 * `old_label` (a flag created without a type: a string).
 */
export async function arrangeReasons(team: TestTeam): Promise<void> {
  await arrangeCheckout(team.api, team.id);
  const path = { team: team.id };
  const created = [
    await team.api.POST('/api/teams/{team}/events', { params: { path }, body: { key: 'revenue', type: 'value' } }),
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'static_bool', type: 'boolean', enabled: true, value: 'true' } }),
    await team.api.POST('/api/teams/{team}/features', {
      params: { path },
      body: { key: 'plan_label', type: 'string', enabled: true, value: 'plain', rules: [{ type: 'force', conditions: { plan: 'pro' }, value: 'gold' }] },
    }),
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'rollout_limit', type: 'number', enabled: true, value: '1', rules: [{ type: 'rollout', percentage: 100, value: '2.5' }] } }),
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'layout', type: 'json', enabled: false, value: '{"columns": 3}' } }),
    await team.api.POST('/api/teams/{team}/features', { params: { path }, body: { key: 'old_label', enabled: true, value: 'hello' } }),
  ];
  for (const step of created) {
    if (step.response.status !== 200) throw new Error(`arranging the flags failed: ${step.response.status} ${JSON.stringify(step.error)}`);
  }
}

/** A `fetch` for a provider: the service as it is, except that its boolean flag `static_bool` serves text no SDK can read as a boolean. */
export async function unreadableConfigFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await fetch(input, init);
  if (!String(input).endsWith('/config') || response.status !== 200) return response;
  const body = (await response.json()) as { data: { features: Array<{ key: string; value: string | null }> } };
  body.data.features.find((flag) => flag.key === 'static_bool')!.value = 'yes';
  return new Response(JSON.stringify(body), { status: 200, headers: response.headers });
}
