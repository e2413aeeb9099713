import { startRealServer, type Environment } from '../lib/environment';
import { describeRound, load, progress, summarise, type LoadSpec, type Measurement, type RoundResult } from '../lib/load';
import type { Options } from '../lib/options';
import type { ServerProcess } from '../lib/processes';
import { bearer } from '../lib/setup';
import { ingestSpec } from './ingest';
import { readSpec } from './reads';

export interface ValidatorResult {
  /** Whether the server honours VALIDATE_REQUESTS=false (it answers an unknown query parameter with 200). */
  knobHonoured: boolean;
  ingest: { on: Measurement; off: Measurement };
  config: { on: Measurement; off: Measurement };
}

/** A second server on the environment's storage with request validation off. */
export function startUnvalidatedServer(env: Environment, options: Options): Promise<ServerProcess> {
  return startRealServer(`validator-off-${env.engine}`, env.scratch, { cpuProf: options.cpuProf, env: { VALIDATE_REQUESTS: 'false' } });
}

/**
 * The same endpoints on the same storage, with request validation on (the environment's server)
 * and off (`off`, from startUnvalidatedServer). Rounds alternate on/off so that drift (a growing
 * database, a warming disk cache) does not favour either side.
 */
export async function validatorPhase(env: Environment, off: ServerProcess, options: Options): Promise<ValidatorResult> {
  try {
    const probe = await fetch(`${off.url}${env.team.paths.config}?bench_unknown=1`, { headers: bearer(env.team.ingestKey) });
    const knobHonoured = probe.status === 200;
    if (!knobHonoured) progress(`validator ${env.engine}: VALIDATE_REQUESTS=false is not honoured yet (answered ${probe.status}); both sides validate`);
    const offEnv = { ...env, server: off };
    return {
      knobHonoured,
      ingest: await alternate(`ingest ${env.engine}`, ingestSpec(env, options), ingestSpec(offEnv, options), options),
      config: await alternate(`GET config ${env.engine}`, readSpec(env, 'config', options), readSpec(offEnv, 'config', options), options),
    };
  } finally {
    await off.stop();
  }
}

async function alternate(label: string, on: LoadSpec, off: LoadSpec, options: Options): Promise<{ on: Measurement; off: Measurement }> {
  await load({ ...on, duration: options.warmup });
  await load({ ...off, duration: options.warmup });
  const rounds: { on: RoundResult[]; off: RoundResult[] } = { on: [], off: [] };
  for (let i = 0; i < options.rounds; i++) {
    for (const side of ['on', 'off'] as const) {
      const round = await load(side === 'on' ? on : off);
      rounds[side].push(round);
      progress(`${label} validation ${side}: round ${i + 1}/${options.rounds}  ${describeRound(round)}`);
    }
  }
  return { on: summarise(rounds.on), off: summarise(rounds.off) };
}
