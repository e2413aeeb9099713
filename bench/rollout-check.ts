// `node --import tsx bench/rollout-check.ts [--checks 200] [--flips 20] [--engines sqlite,postgres]`:
// what a safe rollout's check costs and how soon its rollback reaches an app (issue #42).
// - Check cost: one rollout with 1 000 exposed participants and one with 1 000 000 (participants,
//   exposures and the arms' counters written straight into scratch storage, as the ledger keeps
//   them), each checked `--checks` times, taking turns, in this process through the watcher's own checkRollout
//   (a step held for an hour: the check reads and decides, and writes nothing). Target: the
//   median at 1 000 000 ÷ the median at 1 000 ≤ 2.
// - Decision to flip: the real server (a process of its own, ROLLOUT_CHECK_SECONDS=0.25) and the
//   package's SDK streaming its config here; a rollout's counters are made to show harm, the
//   server's check rolls it back, and the time is from the audit entry of that decision (stamped
//   by the server as it decides) to the SDK's subscriber seeing the flag without its rollout.
//   `--flips` rollouts one at a time. Target: median < 1 s.
// Prints the figures and writes bench/results/<day>-rollout-check.json.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createTeam } from '../server/admin/service';
import { checkRollout } from '../server/rollouts/watcher';
import { openStorage, type Storage } from '../server/storage/database';
import { closeAll, startRealServer } from './lib/environment';
import { spread } from './lib/stats';
import { postgresAnswers, scratchStorage } from './lib/storage';
import type { Engine } from './lib/options';

const { values } = parseArgs({ options: { checks: { type: 'string', default: '200' }, flips: { type: 'string', default: '20' }, engines: { type: 'string', default: 'sqlite,postgres' } } });
const checks = Number(values.checks);
const flips = Number(values.flips);
const engines = values.engines.split(',') as Engine[];
const HELD = [{ percentage: 50, hold_seconds: 3600, minimum_exposures: 0 }, { percentage: 100, hold_seconds: 0, minimum_exposures: 0 }];

async function measure(engine: Engine) {
  const scratch = await scratchStorage(engine);
  const server = await startRealServer(`rollout-check-${engine}`, scratch, { cpuProf: false, env: { ROLLOUT_CHECK_SECONDS: '0.25' } });
  const storage = await openStorage({ ...scratch.options, poolSize: 2 });
  const created = await createTeam(storage.db, { name: 'rollout bench', email: `rollouts-${engine}@bench.example` });
  const base = `${server.url}/api/teams/${created.team.id}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${created.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { data: unknown }).data;
  };
  await call('POST', '/events', { key: 'checkout_error', type: 'unique' });
  const rolloutOf = async (flag: string) => {
    await call('POST', '/features', { key: flag, type: 'boolean', enabled: true, value: 'false' });
    await call('POST', `/features/${flag}/rollouts`, { value: 'true', guardrails: [{ event: 'checkout_error', direction: 'decrease' }], steps: HELD });
    return (await storage.db.selectFrom('rollouts').innerJoin('features', 'features.id', 'rollouts.feature_id').select('rollouts.id').where('features.key', '=', flag).executeTakeFirstOrThrow()).id;
  };
  try {
    const sizes = [1_000, 1_000_000];
    const held = new Map<number, number>();
    for (const exposed of sizes) {
      const id = await rolloutOf(`held_${exposed}`);
      await expose(storage, created.team.id, id, exposed, { new: 0.05, current: 0.05 });
      held.set(exposed, id);
    }
    // Taking turns, so that the machine's drift falls on both alike.
    const times = new Map(sizes.map((size) => [size, [] as number[]]));
    for (let i = 0; i < checks; i++) {
      for (const size of i % 2 === 0 ? sizes : [...sizes].reverse()) {
        const started = performance.now();
        if ((await checkRollout(storage.db, held.get(size)!)) !== undefined) throw new Error('the held rollout was acted on');
        times.get(size)!.push(performance.now() - started);
      }
    }
    const cost = Object.fromEntries(sizes.map((size) => [`${size} exposures, ms a check`, spread(times.get(size)!)]));
    const ratio = cost['1000000 exposures, ms a check']!.median / cost['1000 exposures, ms a check']!.median;

    const { createClient } = await import('../generated/sdk.js');
    const sdk = createClient({ baseUrl: server.url, team: created.team.id, ingestKey: created.ingest_key, onError: () => undefined });
    await sdk.ready();
    const each: number[] = [];
    for (let flip = 0; flip < flips; flip++) {
      const flag = `harmed_${flip}`;
      const id = await rolloutOf(flag);
      await until(() => sdk.config()?.features.some((feature) => feature.key === flag && feature.rollout) ?? false);
      const seen = new Promise<number>((resolve) => {
        const stop = sdk.subscribe((config) => {
          const feature = config.features.find((candidate) => candidate.key === flag);
          if (feature && !feature.rollout) {
            stop();
            resolve(Date.now());
          }
        });
      });
      await expose(storage, created.team.id, id, 2_000, { new: 0.5, current: 0.05 });
      const seenAt = await seen;
      const entries = (await call('GET', `/audit-log?resource_type=rollout&resource_key=${encodeURIComponent(`${flag}/1`)}`)) as Array<{ action: string; at: string }>;
      const decidedAt = Date.parse(entries.find((entry) => entry.action === 'rolled_back')!.at);
      each.push(seenAt - decidedAt);
    }
    await sdk.close();
    return { cost, 'check at 1 000 000 ÷ at 1 000': Math.round(ratio * 100) / 100, 'rollback decided to SDK flip, ms': spread(each), each };
  } finally {
    await storage.close();
    await closeAll();
  }
}

/** `exposed` participants exposed to the rollout, half in each arm, with their arms' counters, and converted on its guardrail at the rates given. */
async function expose(storage: Storage, team: number, rollout: number, exposed: number, rate: { new: number; current: number }) {
  const at = new Date().toISOString();
  const prefix = `r${rollout}-`;
  const numbers = storage.engine === 'postgres' ? sql`select i from generate_series(1, ${exposed}) as s(i)` : sql`with recursive s(i) as (select 1 union all select i + 1 from s where i < ${exposed}) select i from s`;
  await sql`insert into participants (team_id, key, notes, attributes, created_at, updated_at) select ${team}, ${prefix} || i, null, '{}', ${at}, ${at} from (${numbers}) n`.execute(storage.db);
  await sql`insert into rollout_exposures (team_id, rollout_id, participant_id, arm, exposed_at)
    select ${team}, ${rollout}, id, case when id % 2 = 0 then 'new' else 'current' end, ${at} from participants where team_id = ${team} and key like ${prefix + '%'}`.execute(storage.db);
  const half = exposed / 2;
  const event = (await storage.db.selectFrom('events').select('id').where('team_id', '=', team).where('key', '=', 'checkout_error').executeTakeFirstOrThrow()).id;
  for (const arm of ['new', 'current'] as const) {
    const converted = Math.round(half * rate[arm]);
    await storage.db.insertInto('rollout_arm_event_counts').values({ team_id: team, rollout_id: rollout, arm, event_id: event, conversions: converted, unique_conversions: converted, sum_y: String(converted * 1e6), sum_y2: String(BigInt(converted) * 10n ** 12n) }).execute();
  }
  // The arms' exposures last: the check sees the rollout's counters whole.
  await storage.db.insertInto('rollout_arm_counts').values([{ team_id: team, rollout_id: rollout, arm: 'new', participants: half }, { team_id: team, rollout_id: rollout, arm: 'current', participants: half }]).execute();
}

async function until(condition: () => boolean) {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

const results: Record<string, unknown> = { date: new Date().toISOString(), checks, flips, targets: { 'check at 1 000 000 ÷ at 1 000': '≤ 2', 'rollback decided to SDK flip': 'median < 1000 ms' } };
for (const engine of engines) {
  if (engine === 'postgres' && !(await postgresAnswers())) continue;
  results[engine] = await measure(engine);
  console.log(JSON.stringify({ [engine]: results[engine] }, null, 2));
}
writeFileSync(`bench/results/${new Date().toISOString().slice(0, 10)}-rollout-check.json`, JSON.stringify(results, null, 2) + '\n');
