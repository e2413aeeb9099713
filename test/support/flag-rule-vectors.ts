import type { components } from 'experimentation-api';
import vectorFile from '../vectors/flag-rules.json' with { type: 'json' };

type Schemas = components['schemas'];

export interface FlagRuleVector {
  name: string;
  config: Schemas['Config'];
  now: string;
  participants: Array<{ key: string; attributes: Schemas['Attributes']; expected: Schemas['Evaluation'] }>;
}

/**
 * test/vectors/flag-rules.json, written by test/vectors/flag-rules.py, typed by the contract; its
 * flags have no `type`, so they are string flags, as the server serves them.
 */
export const flagRuleVectors = (vectorFile.cases as unknown as FlagRuleVector[]).map((vector) => ({
  ...vector,
  config: { ...vector.config, features: vector.config.features.map((flag) => ({ ...flag, type: flag.type ?? 'string' })) },
}));
