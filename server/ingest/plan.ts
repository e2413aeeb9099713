import type { components } from '../../generated/api';
import type { ConditionAttributes } from '../../domain/conditions';
import { admits, placeParticipant, type Candidate } from '../../domain/eligibility';
import { toMicros } from '../../domain/metric';
import { preExposureValue } from '../../domain/pre-exposure';
import { toEnrolment } from '../enrolments/store';
import type { EventRow } from '../events/store';
import type { ExperimentRow } from '../experiments/store';
import { targetingOf } from '../experiments/targeting';
import { Conflict, QuotaExceeded, type HttpError } from '../http/errors';
import { emptyChange, NO_CONVERSIONS, participantKey, participantState, type Covariate, type LedgerChange, type ParticipantState } from '../ledger/change';
import type { StoredParticipants } from '../ledger/port';
import { toParticipant, type ParticipantInput, type ParticipantRow } from '../participants/store';
import { exact } from '../storage/exact-sums';
import type { TeamRow } from '../teams/store';
import type { ResolvedVariant } from '../experiments/variants-store';
import type { IngestRollout } from '../rollouts/store';
import type { RolloutArm } from '../../domain/rollout-arms';
import { quotaMonth } from '../teams/quota';

type IngestRequest = components['schemas']['IngestRequest'];
type IngestOutcome = components['schemas']['IngestOutcome'];

/**
 * The ingest's decisions, in pure code: which ingests are admitted, and what the admitted ones
 * change — who enters which experiment (sticky, exclusions and exclusion groups kept, targeting
 * and a chosen variant honoured), what each converts — as a change for the ledger, with what each
 * caller is told. flush.ts reads what they need and writes what they decide.
 */

/** One ingest with what it names resolved from its team's context. */
export interface ResolvedIngest {
  team: TeamRow;
  input: IngestRequest;
  given: ParticipantInput;
  event?: EventRow;
  target?: ExperimentRow;
  /** The experiments it may enrol in: the named one, or every running one. */
  experiments: ExperimentRow[];
  /** The team's running experiments: whose exclusion groups a participant's enrolments hold. */
  running: ExperimentRow[];
  variants: Map<number, ResolvedVariant[]>;
  chosen?: ResolvedVariant;
  /** What the event carried, in micro-units (value events only). */
  value?: bigint;
  /** The rollout it records an exposure to, and the arm. */
  exposure?: { rollout: IngestRollout; arm: RolloutArm };
  /** The team's running and paused rollouts, by id: whose arms its event counts in. */
  rollouts: Map<number, IngestRollout>;
}

/** Where a plan starts: its clock and quota month, the key window's cutoff, the participants as stored, and the ingests each team accepts. */
export interface PlanBase {
  at: string;
  month: string;
  cutoff: string;
  participants: Map<string, ParticipantState>;
  quota: Map<number, number>;
}

/** The admitted ingests applied in order to the participants as stored: the change they make, and each one's answer, in their order. */
export function planChange(admitted: ResolvedIngest[], { at, month, cutoff, participants, quota }: PlanBase): { change: LedgerChange; outcomes: IngestOutcome[] } {
  const change: LedgerChange = { ...emptyChange(at, month, cutoff), participants, quota };
  return { change, outcomes: admitted.map((unit) => apply(change, unit)) };
}

/** An ingest's `value` (micro-units): required with a value event, refused with any other (409). */
export function carriedValue(input: IngestRequest, event: EventRow | undefined): bigint | undefined {
  if (!event) return undefined;
  if (event.type === 'value' && input.value === undefined) throw new Conflict(`Event '${event.key}' is a value event: send \`value\` with it.`);
  if (event.type !== 'value' && input.value !== undefined) throw new Conflict(`Event '${event.key}' is a ${event.type} event: it carries no \`value\` (only value events do).`);
  return input.value === undefined ? undefined : toMicros(input.value)!;
}

/**
 * Whether a resolved ingest is refused, as the single ingest decides it against the quota use the
 * ingests before it in the flush have left: 409 for a named experiment that is not running or a
 * chosen variant with a 0 % share (402 first if the quota is used up), 402 when the quota is used
 * up; else it counts against the quota.
 */
export function admission(used: Map<number, number>, unit: ResolvedIngest, at: string): HttpError | undefined {
  const team = unit.team;
  const quotaLeft = team.ingest_limit === null || used.get(team.id)! < team.ingest_limit;
  if (!quotaLeft) return new QuotaExceeded(`Team ${team.id} has used its ${team.ingest_limit} ingests of ${quotaMonth(at)} (UTC).`);
  if (unit.target && unit.target.status !== 'running') return new Conflict(`Experiment '${unit.target.key}' is ${unit.target.status}; only a running experiment enrols.`);
  if (unit.chosen && unit.chosen.share === 0) return new Conflict(`Variant '${unit.chosen.key}' of experiment '${unit.target!.key}' has 0 % of the traffic; no participant may enter it (body.variant).`);
  used.set(team.id, used.get(team.id)! + 1);
  return undefined;
}

/** The participant an ingest names: a key alone, or a key with notes and attributes. */
export const givenParticipant = (input: IngestRequest): ParticipantInput => (typeof input.participant === 'string' ? { key: input.participant } : input.participant);

export function statesOf({ rows, histories }: StoredParticipants): Map<string, ParticipantState> {
  const states = new Map<string, ParticipantState>();
  const byId = new Map<number, ParticipantState>();
  for (const row of rows) {
    const state = participantState(row, false);
    states.set(participantKey(row.team_id, row.key), state);
    byId.set(row.id, state);
  }
  for (const { participant_id, ...enrolment } of histories.enrolments) byId.get(participant_id)!.enrolments.push(enrolment);
  for (const row of histories.exclusions) byId.get(row.participant_id)!.excluded.add(row.experiment_id);
  for (const row of histories.conversions) byId.get(row.participant_id)!.conversions.set(`${row.experiment_id}:${row.event_id}`, { count: Number(row.count), value: exact(row.value) });
  for (const row of histories.covariates) byId.get(row.participant_id)!.covariates.set(`${row.experiment_id}:${row.event_id}`, exact(row.x));
  for (const { participant_id, event_id, day, count, value, type, cap } of histories.activity) {
    const history = byId.get(participant_id)!.history;
    const days = history.get(event_id)?.days ?? history.set(event_id, { metric: { type, cap }, days: [] }).get(event_id)!.days;
    days.push({ day, count: Number(count), value: exact(value) });
  }
  for (const row of histories.rolloutExposures) byId.get(row.participant_id)!.rollouts.set(row.rollout_id, row.arm);
  for (const row of histories.rolloutConversions) byId.get(row.participant_id)!.rolloutConversions.set(`${row.rollout_id}:${row.event_id}`, { count: Number(row.count), value: exact(row.value) });
  return states;
}

/**
 * An accepted ingest applied as the single ingest applies it, against the state the ingests
 * before it in the flush have left: the participant created or updated, enrolled (sticky,
 * exclusions kept) and its event counted. Answers what its caller is told.
 */
export function apply(flush: LedgerChange, unit: ResolvedIngest): IngestOutcome {
  const { at } = flush;
  const team = unit.team;
  const state = participantOf(flush.participants, team.id, unit.given, at);
  const enrolled = new Set(state.enrolments.map((enrolment) => enrolment.experiment_id));
  const candidate = candidateOf(state.row);
  // `enrol: false` enrols nowhere: its event counts only where the participant is enrolled already.
  for (const experiment of unit.input.enrol === false ? [] : unit.experiments) {
    if (experiment.status !== 'running' || enrolled.has(experiment.id) || state.excluded.has(experiment.id)) continue;
    if (holdsGroupOf(state, unit.running, experiment)) continue;
    const targeting = targetingOf(experiment);
    // A chosen variant is honoured only for a participant who qualifies.
    const variant = unit.chosen ? (admits(targeting, candidate) ? unit.chosen : null) : placeParticipant(targeting, candidate, sharesOf(unit.variants.get(experiment.id) ?? []));
    if (!variant) continue;
    state.enrolments.push({ id: 0, experiment_id: experiment.id, variant_id: variant.id, experiment_key: experiment.key, status: 'running', variant_key: variant.key, enrolled_at: at });
    const covariates = covariatesAt(state, at, experiment.pre_exposure_days);
    for (const { eventId, x } of covariates) state.covariates.set(`${experiment.id}:${eventId}`, x);
    flush.enrolments.push({ state, teamId: team.id, experimentId: experiment.id, variantId: variant.id, covariates });
  }
  if (unit.exposure && !state.rollouts.has(unit.exposure.rollout.id)) {
    state.rollouts.set(unit.exposure.rollout.id, unit.exposure.arm);
    flush.rolloutExposures.push({ state, teamId: team.id, rolloutId: unit.exposure.rollout.id, arm: unit.exposure.arm });
  }
  const assignments = state.enrolments.filter((enrolment) => enrolment.status === 'running');
  if (unit.event && !unit.target) countInRollouts(flush, state, unit, unit.event);
  if (unit.event) {
    const event = unit.event;
    const value = unit.value ?? 0n;
    recordActivity(flush, state, team.id, event.id, value);
    for (const placement of assignments.filter((enrolment) => !unit.target || enrolment.experiment_id === unit.target.id)) {
      const conversion = `${placement.experiment_id}:${event.id}`;
      const before = state.conversions.get(conversion) ?? NO_CONVERSIONS;
      const after = { count: before.count + 1, value: before.value + value };
      state.conversions.set(conversion, after);
      const moveKey = `${participantKey(team.id, state.row.key)}\u0000${conversion}`;
      const move = flush.conversions.get(moveKey);
      if (move) move.after = after;
      else {
        const x = state.covariates.get(conversion) ?? 0n;
        flush.conversions.set(moveKey, { state, teamId: team.id, experimentId: placement.experiment_id, eventId: event.id, variantId: placement.variant_id, metric: event, before, after, x });
      }
    }
  }
  return { participant: toParticipant(state.row), assignments: assignments.map(toEnrolment) };
}

/** An event counted in the arm of each running or paused rollout the participant is exposed to that guards it. */
function countInRollouts(flush: LedgerChange, state: ParticipantState, unit: ResolvedIngest, event: EventRow): void {
  for (const [rolloutId, arm] of state.rollouts) {
    if (!unit.rollouts.get(rolloutId)?.guardrails.has(event.id)) continue;
    const conversion = `${rolloutId}:${event.id}`;
    const before = state.rolloutConversions.get(conversion) ?? NO_CONVERSIONS;
    const after = { count: before.count + 1, value: before.value + (unit.value ?? 0n) };
    state.rolloutConversions.set(conversion, after);
    const moveKey = `${participantKey(unit.team.id, state.row.key)}\u0000${conversion}`;
    const move = flush.rolloutConversions.get(moveKey);
    if (move) move.after = after;
    else flush.rolloutConversions.set(moveKey, { state, teamId: unit.team.id, rolloutId, arm, eventId: event.id, metric: event, before, after });
  }
}

/** The participant's covariates for an enrolment at `at` (CUPED's x, frozen now): one per event it did something of in the window, where x is not 0. */
function covariatesAt(state: ParticipantState, at: string, windowDays: number): Covariate[] {
  const covariates: Covariate[] = [];
  for (const [eventId, { metric, days }] of state.history) {
    const x = preExposureValue(metric, days, at, windowDays);
    if (x !== 0n) covariates.push({ eventId, x });
  }
  return covariates;
}

/** Every event a participant sends is its history before any exposure to come, enrolled or not, `enrol: false` too. */
function recordActivity(flush: LedgerChange, state: ParticipantState, teamId: number, eventId: number, value: bigint): void {
  const key = `${participantKey(teamId, state.row.key)}\u0000${eventId}`;
  const activity = flush.activity.get(key);
  if (activity) {
    activity.count += 1;
    activity.value += value;
  } else flush.activity.set(key, { state, teamId, eventId, count: 1, value });
}

// A config version's variants place many participants: each list's traffic is made once (a copy per placement was 4 % of a batch's CPU).
const placements = new WeakMap<ResolvedVariant[], Array<ResolvedVariant & { traffic: number }>>();

/** An experiment's variants with their resolved shares as the traffic a placement reads. */
function sharesOf(variants: ResolvedVariant[]): Array<ResolvedVariant & { traffic: number }> {
  let shares = placements.get(variants);
  if (!shares) placements.set(variants, (shares = variants.map((variant) => ({ ...variant, traffic: variant.share }))));
  return shares;
}

/** The participant as conditions see it: its attributes as stored after this ingest's change, parsed only if a condition asks. */
function candidateOf(row: ParticipantRow): Candidate {
  let attributes: ConditionAttributes | undefined;
  return {
    key: row.key,
    get attributes() {
      return (attributes ??= JSON.parse(row.attributes) as ConditionAttributes);
    },
  };
}

/** Whether the participant is enrolled in another running experiment of the experiment's exclusion group. */
function holdsGroupOf(state: ParticipantState, running: ExperimentRow[], experiment: ExperimentRow): boolean {
  if (experiment.group_key === null) return false;
  return state.enrolments.some((enrolment) => {
    if (enrolment.experiment_id === experiment.id || enrolment.status !== 'running') return false;
    return running.find((other) => other.id === enrolment.experiment_id)?.group_key === experiment.group_key;
  });
}

/** The participant's state in the flush: as read, or created by this ingest; given notes and attributes applied. */
function participantOf(participants: Map<string, ParticipantState>, teamId: number, given: ParticipantInput, at: string): ParticipantState {
  const key = participantKey(teamId, given.key);
  let state = participants.get(key);
  if (!state) {
    const row: ParticipantRow = { id: 0, team_id: teamId, key: given.key, notes: given.notes ?? null, attributes: JSON.stringify(given.attributes ?? {}), created_at: at, updated_at: at };
    const created = participantState(row, true);
    participants.set(key, created);
    return created;
  }
  if (given.notes !== undefined || given.attributes !== undefined) {
    state.row = {
      ...state.row,
      ...(given.notes !== undefined && { notes: given.notes }),
      ...(given.attributes !== undefined && { attributes: JSON.stringify(given.attributes) }),
      updated_at: at,
    };
    state.changed = !state.isNew;
  }
  return state;
}
