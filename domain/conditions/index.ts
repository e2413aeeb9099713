export { evaluateCondition, type Condition, type ConditionAttributes } from './evaluate';
export { CONDITION_LIMITS } from './limits';
export { conditionProblems, conditionShape, patternProblems, type ConditionProblem, type PatternAt } from './validate';
