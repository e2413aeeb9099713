// The SDK's decisions (sdk/decisions.ts: one flag or one experiment at a time) against the shared
// flag-rule vectors, which the server's whole-config evaluation answers too.
import { describe, expect, it } from 'vitest';
import { decideExperiment, decideFeature, indexConfig } from '../../sdk/decisions';
import { flagRuleVectors } from '../support/flag-rule-vectors';

describe('the SDK decisions', () => {
  it.each(flagRuleVectors.map((vector) => [vector.name, vector] as const))('%s: each flag and experiment decided alone answers as the vector expects', (_name, vector) => {
    const indexed = indexConfig(vector.config);
    const now = Date.parse(vector.now);
    for (const { key, attributes, expected } of vector.participants) {
      for (const [experiment, variant] of Object.entries(expected.experiments)) {
        expect(decideExperiment(indexed, experiment, key, attributes), `${experiment} for ${key}`).toBe(variant);
      }
      for (const [flag, evaluation] of Object.entries(expected.features)) {
        const decision = decideFeature(indexed, flag, key, attributes, now)!;
        expect(decision.value, `${flag} for ${key}`).toBe(evaluation.value);
        // Exposures name only experiments the participant is in, with its variant there.
        for (const exposure of decision.exposures) expect(exposure.variant).toBe(expected.experiments[exposure.experiment]);
        // The experiment rule that served the value is among them.
        const rule = evaluation.rule === null ? undefined : vector.config.features.find((f) => f.key === flag)!.rules![evaluation.rule];
        if (rule?.type === 'experiment') expect(decision.exposures.map((e) => e.experiment)).toContain(rule.experiment);
        if (evaluation.reason === 'disabled') expect(decision.exposures).toEqual([]);
      }
    }
  });

  it('when the flag or experiment is not in the config, then there is no decision', () => {
    const indexed = indexConfig({ team: 1, experiments: [], features: [] });
    expect(decideExperiment(indexed, 'missing', 'user-1', {})).toBeNull();
    expect(decideFeature(indexed, 'missing', 'user-1', {}, Date.now())).toBeUndefined();
  });
});
