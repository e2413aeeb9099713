import type { components } from '../../generated/api';
import { conditionShape, patternProblems } from '../../domain/conditions';
import { flagValueProblem, type FlagType } from '../../domain/flag-types';
import { defaultSteps, rampProblem, type RolloutStep } from '../../domain/rollout-arms';
import { findEvent } from '../events/store';
import { BadRequest, NotFound } from '../http/errors';
import type { Db } from '../storage/database';
import type { TeamRow } from '../teams/store';

type RolloutCreate = components['schemas']['RolloutCreate'];
type Step = components['schemas']['RolloutStep'];
type FieldError = components['schemas']['ProblemFieldError'];

const STEP_FIELDS: Record<keyof RolloutStep, keyof Step> = { percentage: 'percentage', holdSeconds: 'hold_seconds', minimumExposures: 'minimum_exposures' };

/** The ramp as given, or the default one (rollout-arms.ts), in the contract's terms. */
export function stepsOf(input: RolloutCreate): Step[] {
  return input.steps ?? defaultSteps().map((step) => ({ percentage: step.percentage, hold_seconds: step.holdSeconds, minimum_exposures: step.minimumExposures }));
}

/**
 * 400 naming each field the schema cannot judge: a value that does not read as the flag's type,
 * a malformed condition (its patterns compiled last), a repeated guardrail event, a ramp that
 * breaks rampProblem's rules.
 */
export function checkRollout(type: FlagType, input: RolloutCreate, steps: Step[]): void {
  const problems: FieldError[] = [];
  const valueProblem = flagValueProblem(type, input.value);
  if (valueProblem !== undefined) problems.push({ path: '/body/value', message: valueProblem });
  const shape = input.conditions === undefined ? { problems: [], patterns: [] } : conditionShape(input.conditions, '/body/conditions');
  problems.push(...shape.problems);
  const seen = new Set<string>();
  for (const [index, guardrail] of (input.guardrails ?? []).entries()) {
    if (seen.has(guardrail.event)) problems.push({ path: `/body/guardrails/${index}/event`, message: `repeats the guardrail '${guardrail.event}'` });
    seen.add(guardrail.event);
  }
  const ramp = rampProblem(steps.map((step) => ({ percentage: step.percentage, holdSeconds: step.hold_seconds, minimumExposures: step.minimum_exposures })));
  if (ramp) problems.push({ path: `/body/steps/${ramp.index}/${STEP_FIELDS[ramp.field]}`, message: ramp.message });
  throwProblems(problems);
  throwProblems(patternProblems(shape.patterns));
}

/** 404 naming the field when a guardrail is not an event of the team. */
export async function checkGuardrailEvents(db: Db, team: TeamRow, input: RolloutCreate): Promise<void> {
  for (const [index, guardrail] of (input.guardrails ?? []).entries()) {
    if (!(await findEvent(db, team.id, guardrail.event))) throw new NotFound(`/body/guardrails/${index}/event: no event '${guardrail.event}' in team ${team.id}.`);
  }
}

function throwProblems(problems: FieldError[]): void {
  if (problems.length > 0) throw new BadRequest(problems.map((p) => `${p.path} ${p.message}`).join('; '), problems);
}
