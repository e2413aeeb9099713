export { evaluateCondition, type Condition, type ConditionAttributes } from './evaluate';
export { CONDITION_LIMITS } from './limits';
export { conditionProblems, type ConditionProblem } from './validate';
