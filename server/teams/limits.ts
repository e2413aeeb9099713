import { sql } from 'kysely';
import { LimitReached } from '../http/errors';
import { countInTeam } from '../storage/counts';
import type { Db } from '../storage/database';
import type { TeamRow } from './store';

/**
 * What one team may hold, so that no team can make its config, its statistics or its ingests
 * large enough to slow the service for every other team. The contract states them (Limits).
 * Each is checked inside the transaction that would add to it, after the team's lock.
 */
export const TEAM_LIMITS = {
  events: 200,
  experiments: 500,
  runningExperiments: 50,
  variantsPerExperiment: 100,
  features: 500,
  /** The characters of all the team's flag values together. */
  flagValueCharacters: 262_144,
  /** The bytes of the team's config as GET …/config answers it (`{"data": Config}`, JSON in UTF-8), conditions and all. */
  configBytes: 1_048_576,
} as const;

const NAMES = { events: 'events', experiments: 'experiments', features: 'feature flags' } as const;

/** 409 when the team already holds as many events, experiments or flags as it may. */
export async function requireRoomFor(trx: Db, team: TeamRow, table: keyof typeof NAMES): Promise<void> {
  const held = await countInTeam(trx, table, team.id);
  if (held >= TEAM_LIMITS[table]) throw new LimitReached(`Team ${team.id} has ${held} ${NAMES[table]}, the most a team may have (${TEAM_LIMITS[table]}); delete some first.`);
}

/** 409 when the team already runs as many experiments as it may. */
export async function requireRoomToRun(trx: Db, team: TeamRow): Promise<void> {
  const row = await trx
    .selectFrom('experiments')
    .select((eb) => eb.fn.countAll<number>().as('running'))
    .where('team_id', '=', team.id)
    .where('status', '=', 'running')
    .executeTakeFirstOrThrow();
  const running = Number(row.running);
  if (running >= TEAM_LIMITS.runningExperiments) {
    throw new LimitReached(`Team ${team.id} runs ${running} experiments, the most a team may run at once (${TEAM_LIMITS.runningExperiments}); stop one first.`);
  }
}

/**
 * 409 when the team's flag values and rules, with `value` (a flag's value and rules text) in
 * place of the flag `replacing` (if any), would exceed their limit.
 */
export async function requireRoomForValue(trx: Db, team: TeamRow, value: string | null | undefined, replacing?: number): Promise<void> {
  if (!value) return;
  const rulesLength = sql<number>`case when rules = '[]' then 0 else length(rules) end`;
  let others = trx
    .selectFrom('features')
    .select((eb) => eb.fn.sum<number | string | null>(eb(eb.fn.coalesce(eb.fn('length', ['value']), sql<number>`0`), '+', rulesLength)).as('characters'))
    .where('team_id', '=', team.id);
  if (replacing !== undefined) others = others.where('id', '<>', replacing);
  const { characters } = await others.executeTakeFirstOrThrow();
  const total = Number(characters ?? 0) + [...value].length;
  if (total > TEAM_LIMITS.flagValueCharacters) {
    throw new LimitReached(`Team ${team.id}'s flag values would hold ${total} characters, more than a team's config may (${TEAM_LIMITS.flagValueCharacters}).`);
  }
}

/**
 * 409 limit-reached naming `field` when the team's config, as the change under way in `trx` leaves
 * it, would be larger than TEAM_LIMITS.configBytes (server/config/service.ts's requireConfigFits).
 * The config is built from the resources whose changes call it, so app.ts hands it to their routes.
 */
export type ConfigFits = (trx: Db, team: TeamRow, field: string | undefined) => Promise<void>;

/**
 * Of the body's fields among `names`, the one `input` gives with the longest JSON — what a refusal
 * of the config's size names (`/body/<name>`); undefined when it gives none of them.
 */
export function largestField(input: object, names: string[]): string | undefined {
  const sizes = names.flatMap((name) => {
    const value = (input as Record<string, unknown>)[name];
    return value === undefined ? [] : [{ name, size: JSON.stringify(value).length }];
  });
  const largest = sizes.sort((a, b) => b.size - a.size)[0];
  return largest && `/body/${largest.name}`;
}
