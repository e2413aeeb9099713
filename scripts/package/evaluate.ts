// The package's evaluator: the server's own evaluation code (domain/), bundled into
// evaluate.js by scripts/generate.ts, with these signatures as its declarations.
import type { components } from '../../generated/api';
import { evaluateCondition as conditionHolds } from '../../domain/conditions';
import { evaluateConfig as evaluateWhole } from '../../domain/evaluation';

type Schemas = components['schemas'];

/** The participant to evaluate: its key, and the attributes conditions are matched against. */
export interface Participant {
  key: string;
  attributes?: Schemas['Attributes'];
}

/**
 * Whether `attributes` satisfy `condition` (the condition language of the team config), as the
 * server decides it.
 */
export function evaluateCondition(condition: Schemas['Condition'], attributes: Schemas['Attributes']): boolean {
  return conditionHolds(condition, attributes);
}

/**
 * A team config (the `data` of `GET /api/teams/{team}/config`) evaluated for one participant:
 * every flag's value and every running experiment's variant, exactly as
 * `POST /api/teams/{team}/evaluate` answers without enrolment. Synchronous, no I/O; `now`
 * (default: the current time) is the moment rule schedules are judged at. Report the
 * experiments' variants with the ingest operation to enrol the participant.
 */
export function evaluateConfig(config: Schemas['Config'], participant: Participant, options: { now?: Date } = {}): Schemas['Evaluation'] {
  return evaluateWhole(config, participant, { now: options.now });
}
