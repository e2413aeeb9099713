// OpenFeature's flag evaluation suite — the scenarios of open-feature/spec's
// specification/assets/gherkin/evaluation.feature, in its order, each step one of our own
// (support/openfeature-evaluation.ts) — run through @openfeature/server-sdk against the real
// server on each engine, twice: with the package's server provider, and with the community's
// OFREP provider against the server's OFREP endpoints.
import { OFREPProvider } from '@openfeature/ofrep-provider';
import type { Provider } from '@openfeature/server-sdk';
import { ExperimentationServerProvider } from 'experimentation-api/openfeature';
import { beforeAll, describe, it } from 'vitest';
import { engines } from '../support/engines';
import { useServer } from '../support/server';
import { createEvaluationFlags, EvaluationSteps } from '../support/openfeature-evaluation';
import type { TestServer } from '../support/server';
import type { TestTeam } from '../support/team';

/** The providers the suite runs with, each reaching the team on the server. */
const PROVIDERS: Record<string, (server: TestServer, team: TestTeam) => Provider> = {
  "the package's server provider": (server, team) => new ExperimentationServerProvider({ baseUrl: server.baseUrl, team: team.id, ingestKey: team.ingestKey }),
  // Configured as its README says, with the team's base URL and ingest key: nothing of ours in between.
  'the community OFREP provider (@openfeature/ofrep-provider)': (server, team) =>
    new OFREPProvider({ baseUrl: `${server.baseUrl}/api/teams/${team.id}`, headers: [['Authorization', `Bearer ${team.ingestKey}`]] }),
};

describe.each(engines)('OpenFeature flag evaluation on %s', (engine) => {
  const server = useServer(engine);
  let team: TestTeam;

  beforeAll(async () => {
    team = await server().newTeam();
    await createEvaluationFlags(team);
  });

  describe.each(Object.keys(PROVIDERS))('with %s', (name) => {
    /** Runs a scenario after its Background (Given a stable provider). */
    const scenario = (title: string, steps: (given: EvaluationSteps) => Promise<void> | void) =>
      it(title, async () => {
        const given = new EvaluationSteps(() => PROVIDERS[name]!(server(), team));
        await given.aStableProvider();
        try {
          await steps(given);
        } finally {
          await given.close();
        }
      });

    scenario('Resolves boolean value', async (s) => {
      await s.evaluate('boolean', 'boolean-flag', false);
      s.theValueIs(true);
    });

    scenario('Resolves string value', async (s) => {
      await s.evaluate('string', 'string-flag', 'bye');
      s.theValueIs('hi');
    });

    scenario('Resolves integer value', async (s) => {
      await s.evaluate('integer', 'integer-flag', 1);
      s.theValueIs(10);
    });

    scenario('Resolves float value', async (s) => {
      await s.evaluate('float', 'float-flag', 0.1);
      s.theValueIs(0.5);
    });

    scenario('Resolves object value', async (s) => {
      await s.evaluate('object', 'object-flag', null);
      s.theObjectHas({ showImages: true, title: 'Check out these pics!', imagesPerPage: 100 });
    });

    scenario('Resolves boolean details', async (s) => {
      await s.evaluate('boolean', 'boolean-flag', false);
      s.theValueIs(true);
      s.theVariantAndReasonAre('on', 'STATIC');
    });

    scenario('Resolves string details', async (s) => {
      await s.evaluate('string', 'string-flag', 'bye');
      s.theValueIs('hi');
      s.theVariantAndReasonAre('greeting', 'STATIC');
    });

    scenario('Resolves integer details', async (s) => {
      await s.evaluate('integer', 'integer-flag', 1);
      s.theValueIs(10);
      s.theVariantAndReasonAre('ten', 'STATIC');
    });

    scenario('Resolves float details', async (s) => {
      await s.evaluate('float', 'float-flag', 0.1);
      s.theValueIs(0.5);
      s.theVariantAndReasonAre('half', 'STATIC');
    });

    scenario('Resolves object details', async (s) => {
      await s.evaluate('object', 'object-flag', null);
      s.theObjectHas({ showImages: true, title: 'Check out these pics!', imagesPerPage: 100 });
      s.theVariantAndReasonAre('template', 'STATIC');
    });

    scenario('Resolves based on context', async (s) => {
      s.contextContains({ fn: 'Sulisław', ln: 'Świętopełk', age: 29, customer: false });
      await s.evaluate('string', 'context-aware', 'EXTERNAL');
      s.theValueIs('INTERNAL');
      await s.withAnEmptyContextTheValueIs('EXTERNAL');
    });

    scenario('Flag not found', async (s) => {
      await s.evaluate('string', 'missing-flag', 'uh-oh');
      s.theDefaultIsReturned();
      s.theErrorIs('FLAG_NOT_FOUND');
    });

    scenario('Type error', async (s) => {
      await s.evaluate('integer', 'wrong-flag', 13);
      s.theDefaultIsReturned();
      s.theErrorIs('TYPE_MISMATCH');
    });
  });
});
