import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluateConfig as packageEvaluate } from 'experimentation-api';
import { evaluateConfig as serverEvaluate } from '../../domain/evaluation';
import { inRollout } from '../../domain/flag-rules';
import { flagRuleVectors } from '../support/flag-rule-vectors';

const vectorsPath = fileURLToPath(new URL('../vectors/flag-rules.json', import.meta.url));
const script = fileURLToPath(new URL('../vectors/flag-rules.py', import.meta.url));
const evaluations = flagRuleVectors.flatMap((vector) =>
  vector.participants.map((participant) => [`${vector.name} — ${participant.key}`, vector.config, new Date(vector.now), participant] as const),
);

describe('flag-rule vectors (test/vectors/flag-rules.json)', () => {
  it('when the file is read, then it holds every kind of rule over many participants', () => {
    const kinds = new Set(flagRuleVectors.flatMap((c) => c.config.features.flatMap((f) => f.rules.map((r) => r.type))));
    expect([...kinds].sort()).toEqual(['experiment', 'force', 'rollout']);
    expect(evaluations.length).toBeGreaterThan(100);
  });

  it.each(evaluations)('%s: the server\'s evaluator gives the expected answer', (_name, config, now, participant) => {
    expect(serverEvaluate(config, participant, { now })).toEqual(participant.expected);
  });

  it.each(evaluations)('%s: the package\'s evaluator gives the expected answer', (_name, config, now, participant) => {
    expect(packageEvaluate(config, participant, { now })).toEqual(participant.expected);
  });

  it('when the Python implementation replays the file, then every evaluation agrees', async () => {
    const { stdout } = await promisify(execFile)('python3', [script, '--check', vectorsPath]);
    expect(stdout).toContain(`${evaluations.length} of ${evaluations.length} evaluations agree`);
  });
});

describe('rollout properties', () => {
  it('when a rollout is raised, then everyone it served is still served (monotone)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.integer({ min: 0, max: 10000 }), fc.integer({ min: 0, max: 10000 }), (flag, participant, a, b) => {
        const [low, high] = a <= b ? [a / 100, b / 100] : [b / 100, a / 100];
        expect(!inRollout(flag, participant, low) || inRollout(flag, participant, high)).toBe(true);
      }),
    );
  });
});
