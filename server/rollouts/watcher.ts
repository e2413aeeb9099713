import type { Logger } from 'pino';
import type { RolloutDecision } from '../../domain/rollout-decision';
import { record, type Change } from '../audit/service';
import type { Db, Storage } from '../storage/database';
import { changingConfig } from '../storage/config-version';
import { teamWrite } from '../storage/team-lock';
import { now } from '../storage/values';
import { decide, observe, readCounters } from './counters';
import * as store from './store';
import { advanced, releaseValue, released, rolledBack } from './transitions';

/** What a check did to one rollout. */
export type Acted = { rollout: number; action: 'advanced' | 'released' | 'rolled_back' | 'held' | 'unheld' };

/** Thrown inside a decision's transaction when, under the team's lock, the rollout is no longer where the check found it: nothing is written. */
class Moved extends Error {}

/**
 * One check of every running or paused rollout, of every team. Each is decided on its live
 * counters (O(arms × guardrails), whatever the exposures) outside any transaction; a decision
 * that changes it is then made again inside one that first takes the team's lock, as every
 * writer of the team does (on PostgreSQL an advisory lock, so of several processes checking at
 * once exactly one acts: the others find it moved and write nothing), and applied only if the
 * rollout still stands at the state and step it was decided at. Its change and its audit entry
 * (with the webhooks it queues) commit together, so a process killed mid-decision leaves the
 * rollout as it was, for the next check to decide again.
 */
export async function checkRollouts(storage: Storage, at: number = Date.now()): Promise<Acted[]> {
  const acted: Acted[] = [];
  for (const { id } of await store.activeRolloutIds(storage.db)) {
    const action = await checkRollout(storage.db, id, at);
    if (action) acted.push({ rollout: id, action });
  }
  return acted;
}

/** One check of one rollout (what checkRollouts does for each): the action taken, if any. */
export async function checkRollout(db: Db, id: number, at: number = Date.now()): Promise<Acted['action'] | undefined> {
  const rollout = await store.findRolloutById(db, id);
  if (!rollout || !store.ACTIVE_STATES.includes(rollout.state)) return undefined;
  const decision = decide(rollout, await readCounters(db, rollout), at);
  const action = actionOf(rollout, decision);
  if (!action) return undefined;
  const write = action === 'held' || action === 'unheld' ? teamWrite : changingConfig;
  try {
    await write(db, rollout.team_id, async (trx) => {
      const current = await store.findRolloutById(trx, id);
      if (!current || current.state !== rollout.state || current.step !== rollout.step) throw new Moved();
      const counters = await readCounters(trx, current);
      const again = decide(current, counters, at);
      if (actionOf(current, again) !== action) throw new Moved();
      await apply(trx, current, again, counters.exposures, action);
    });
    return action;
  } catch (error) {
    if (error instanceof Moved) return undefined;
    throw error;
  }
}

/** What a decision does to the rollout as stored; undefined when it changes nothing. */
function actionOf(rollout: store.RolloutRow, decision: RolloutDecision): Acted['action'] | undefined {
  switch (decision.action) {
    case 'roll_back':
      return 'rolled_back';
    case 'advance':
      return 'advanced';
    case 'release':
      return 'released';
    case 'hold':
      return rollout.hold === null ? 'held' : undefined;
    case 'wait':
      return rollout.hold === null ? undefined : 'unheld';
  }
}

async function apply(trx: Db, rollout: store.RolloutRow, decision: RolloutDecision, exposures: { new: number; current: number }, action: Acted['action']): Promise<void> {
  const at = now();
  const feature = (await store.featureOfRollout(trx, rollout))!;
  const guardrails = JSON.parse(rollout.guardrails) as Array<{ event: string }>;
  const changes =
    decision.action === 'roll_back'
      ? rolledBack(at, { event: guardrails[decision.guardrail]!.event, reading: decision.guardrails[decision.guardrail]! })
      : decision.action === 'advance'
        ? advanced(rollout, decision.step, exposures, at)
        : decision.action === 'release'
          ? released(rollout, at)
          : { hold: decision.action === 'hold' ? JSON.stringify({ since: at, sample_ratio_p_value: decision.sampleRatioPValue }) : null, updated_at: at };
  const updated = (await store.updateRollout(trx, rollout.id, [rollout.state], changes))!;
  if (action === 'unheld') return;
  const observed = await observe(trx, rollout);
  const change: Change = { actor: { type: 'service', reason: reasonOf(decision, guardrails) }, requestId: null };
  const key = `${feature.key}/${rollout.number}`;
  await record(trx, rollout.team_id, change, { resource: 'rollout', key, action, before: store.toRollout(rollout, feature.key, observed), after: store.toRollout(updated, feature.key, observed) });
  if (decision.action === 'release') await releaseValue(trx, { id: rollout.team_id }, feature, rollout.value, change);
}

/** Why the service acted, in the audit entry's words. */
function reasonOf(decision: RolloutDecision, guardrails: Array<{ event: string }>): string {
  switch (decision.action) {
    case 'roll_back': {
      const reading = decision.guardrails[decision.guardrail]!;
      return `safe rollout: guardrail ${guardrails[decision.guardrail]!.event} harmed (difference ${reading.difference}, adjusted p ${reading.adjustedPValue.toPrecision(3)})`;
    }
    case 'hold':
      return `safe rollout: sample ratio mismatch (p ${decision.sampleRatioPValue.toPrecision(3)}); held`;
    case 'advance':
      return `safe rollout: step held long enough with enough exposures and no guardrail harmed; advanced to step ${decision.step}`;
    default:
      return 'safe rollout: last step reached with no guardrail harmed; released';
  }
}

/**
 * Every server process checks the rollouts every `intervalMs` (ROLLOUT_CHECK_SECONDS), from
 * start-up on; a check still running when the next is due is not doubled. Answers how to stop,
 * waiting for a check in progress.
 */
export function watchRollouts(storage: Storage, intervalMs: number, logger: Logger): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const check = () => {
    if (running) return;
    running = checkRollouts(storage)
      .then((acted) => {
        for (const { rollout, action } of acted) logger.info({ rollout, action }, 'safe rollout decided');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'checking the safe rollouts failed; the next check tries again'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
