// What a request with conditions costs before it is refused: the checks that cost little come
// first, and a request compiles at most 50 patterns (Condition.yaml, FeatureRules.yaml). Counted in
// compiles of RE2 patterns in this process, where the server runs.
import { RE2JS } from 're2js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { components } from 'experimentation-api';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { expectProblem } from '../support/problems';
import type { TestTeam } from '../support/team';

type Rule = components['schemas']['FeatureRule'];

let unique = 0;
/** A rule whose condition holds `count` patterns never compiled before in this process (so none comes from the cache). */
function ruleOf(count: number, extra: Record<string, unknown> = {}): Rule {
  const patterns = Array.from({ length: count }, () => ({ name: { $regex: `^p${++unique}-[a-z]{2,9}$` } }));
  return { type: 'force', value: 'on', conditions: { $or: patterns, ...extra } } as Rule;
}

/** 2 000 values and more: a condition the schema admits and the service refuses for its size. */
const TOO_MANY_VALUES = { a: { $in: Array.from({ length: 1000 }, (_, i) => i) }, b: { $in: Array.from({ length: 1000 }, (_, i) => i) } };

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(engines)('compiles a request with conditions costs, on %s', (engine) => {
  const server = useServer(engine);

  async function post(team: TestTeam, rules: Rule[], value: string | null = 'on') {
    return team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body: { key: `flag_${++unique}`, value, rules } });
  }

  it('when a flag has 50 rules of 20 patterns, then it is refused at /body/rules without compiling one', async () => {
    const team = await server().newTeam();
    const compile = vi.spyOn(RE2JS, 'compile');
    const { response, error } = await post(team, Array.from({ length: 50 }, () => ruleOf(20)));
    expectProblem(response, error, 400, 'Bad Request', ['/body/rules']);
    expect(compile).not.toHaveBeenCalled(); // 1 000 before the bound
  });

  it('when a flag\'s rules hold 50 patterns, then each is compiled once and the flag is stored', async () => {
    const team = await server().newTeam();
    const compile = vi.spyOn(RE2JS, 'compile');
    const { response } = await post(team, Array.from({ length: 5 }, () => ruleOf(10)));
    expect(response.status).toBe(200);
    expect(compile).toHaveBeenCalledTimes(50);
  });

  it('when a rule\'s condition is too large, then its patterns are not compiled', async () => {
    const team = await server().newTeam();
    const compile = vi.spyOn(RE2JS, 'compile');
    const { response, error } = await post(team, [ruleOf(20, TOO_MANY_VALUES)]);
    expectProblem(response, error, 400, 'Bad Request', ['/body/rules/0/conditions']);
    expect(compile).not.toHaveBeenCalled();
  });

  it('when the flag would pass the team\'s limit on flag values, then it is refused before any pattern is compiled', async () => {
    const team = await server().newTeam();
    const filler = 'x'.repeat(10_000);
    for (let i = 0; i < 26; i++) expect((await post(team, [], filler)).response.status).toBe(200);
    const compile = vi.spyOn(RE2JS, 'compile');
    const { response, error } = await post(team, [ruleOf(20)], filler);
    expectProblem(response, error, 409, 'Conflict');
    expect(compile).not.toHaveBeenCalled();
  });

  it('when an experiment\'s condition is too large, then its patterns are not compiled', async () => {
    const team = await server().newTeam();
    await team.api.POST('/api/teams/{team}/events', { params: { path: { team: team.id } }, body: { key: 'goal' } });
    const compile = vi.spyOn(RE2JS, 'compile');
    const conditions = { ...ruleOf(20).conditions, ...TOO_MANY_VALUES } as components['schemas']['Condition'];
    const { response, error } = await team.api.POST('/api/teams/{team}/experiments', { params: { path: { team: team.id } }, body: { key: `exp_${++unique}`, event: 'goal', conditions } });
    expectProblem(response, error, 400, 'Bad Request', ['/body/conditions']);
    expect(compile).not.toHaveBeenCalled();
  });
});
