// The kit's safe rollouts, on its own flag: one created with the kit's event as its guardrail, a
// participant of the kit's own exposed in the arm the documented hash gives (another arm, an unknown
// rollout and a rolled back one refused), counted in its exposures and its guardrail's reading;
// paused, resumed and rolled back (the flag keeps its value); a second released (the flag's value
// becomes the new one).
import { rolloutArm } from '../domain/rollout-arms';
import type { Session } from './session';

const ROLLOUTS = '/api/teams/{team}/features/{feature}/rollouts';
const ROLLOUT = `${ROLLOUTS}/{rollout}`;

const INGEST = '/api/teams/{team}/ingest';

/** `guardrail`: an event of the kit's; `participant`: a participant of the kit's, which it deletes at the end. */
export async function rollouts(session: Session, path: { team: number }, key: string, guardrail: string, participant: string) {
  const feature = { ...path, feature: key };
  const first = { ...feature, rollout: '1' };
  const steps = [
    { percentage: 50, hold_seconds: 0, minimum_exposures: 0 },
    { percentage: 100, hold_seconds: 0, minimum_exposures: 0 },
  ];
  const guardrails = [{ event: guardrail, direction: 'increase' }];
  const created = await session.call({ purpose: "creates a rollout of the kit's flag, the kit's event its guardrail", operation: `POST ${ROLLOUTS}`, path: feature, body: { value: 'rolled out safely', guardrails, steps }, expect: 200 });
  session.expectThat(`POST ${ROLLOUTS}`, 'it runs at its first step with a 32-hex seed, nothing exposed, no hold', created?.data?.state === 'running' && created?.data?.share === 50 && /^[0-9a-f]{32}$/.test(String(created?.data?.seed)) && created?.data?.exposures?.new === 0 && created?.data?.exposures?.current === 0 && created?.data?.hold === null);
  // At 50 % every participant is in one arm: the documented hash says which
  const arm = rolloutArm(String(created?.data?.seed), participant, 50) ?? 'new';
  const other = arm === 'new' ? 'current' : 'new';
  const expose = (body: object, expect: number, purpose: string) => session.call({ purpose, operation: `POST ${INGEST}`, path, credential: 'ingest-key', body: { participant, ...body }, expect });
  await expose({ rollout: { feature: key, number: 1, arm }, event: guardrail }, 200, "exposes a participant of the kit's in the arm the hash gives, with its guardrail event");
  await expose({ rollout: { feature: key, number: 1, arm: other } }, 409, 'an exposure in the other arm is 409');
  await expose({ rollout: { feature: key, number: 999, arm } }, 404, 'an exposure to a rollout that does not exist is 404');
  const exposed = await session.call({ purpose: 'the rollout with its exposure', operation: `GET ${ROLLOUT}`, path: first, expect: 200 });
  const reading = exposed?.data?.readings?.[0];
  session.expectThat(`GET ${ROLLOUT}`, 'the exposure counts once in its arm, and the guardrail reads it', exposed?.data?.exposures?.[arm] === 1 && exposed?.data?.exposures?.[other] === 0 && reading?.event === guardrail && reading?.[arm]?.participants === 1 && reading?.[arm]?.mean === 1 && reading?.harmed === false);
  await session.call({ purpose: 'a second rollout while one runs is 409', operation: `POST ${ROLLOUTS}`, path: feature, body: { value: 'again' }, expect: 409 });
  await session.call({ purpose: 'a ramp whose last step is not 100 is 400', operation: `POST ${ROLLOUTS}`, path: feature, body: { value: 'x', steps: [steps[0], { ...steps[0], percentage: 60 }] }, expect: 400 });
  await session.call({ purpose: "the flag's rollouts", operation: `GET ${ROLLOUTS}`, path: feature, expect: 200 });
  await session.call({ purpose: 'the rollout', operation: `GET ${ROLLOUT}`, path: first, expect: 200 });
  await session.call({ purpose: 'a rollout that does not exist is 404', operation: `GET ${ROLLOUT}`, path: { ...feature, rollout: '999' }, expect: 404 });
  await session.call({ purpose: 'pauses it', operation: `POST ${ROLLOUT}/pause`, path: first, expect: 200 });
  await session.call({ purpose: 'a paused rollout cannot pause: 409', operation: `POST ${ROLLOUT}/pause`, path: first, expect: 409 });
  await session.call({ purpose: 'resumes it', operation: `POST ${ROLLOUT}/resume`, path: first, expect: 200 });
  await session.call({ purpose: 'a running rollout cannot resume: 409', operation: `POST ${ROLLOUT}/resume`, path: first, expect: 409 });
  const rolledBack = await session.call({ purpose: 'rolls it back', operation: `POST ${ROLLOUT}/roll-back`, path: first, expect: 200 });
  session.expectThat(`POST ${ROLLOUT}/roll-back`, 'it is rolled_back, by hand', rolledBack?.data?.state === 'rolled_back' && rolledBack?.data?.rollback?.reason === 'manual');
  await session.call({ purpose: 'a rolled back rollout cannot be released: 409', operation: `POST ${ROLLOUT}/release`, path: first, expect: 409 });
  await expose({ rollout: { feature: key, number: 1, arm } }, 409, 'an exposure to a rolled back rollout is 409');
  await session.call({ purpose: 'creates a second rollout', operation: `POST ${ROLLOUTS}`, path: feature, body: { value: 'rolled out safely', steps }, expect: 200 });
  const released = await session.call({ purpose: 'releases it', operation: `POST ${ROLLOUT}/release`, path: { ...feature, rollout: '2' }, expect: 200 });
  session.expectThat(`POST ${ROLLOUT}/release`, 'it is released at 100 %', released?.data?.state === 'released' && released?.data?.share === 100);
  const flag = await session.call({ purpose: 'the flag after the release', operation: 'GET /api/teams/{team}/features/{feature}', path: feature, expect: 200 });
  session.expectThat(`POST ${ROLLOUT}/release`, "the flag's value is the released one", flag?.data?.value === 'rolled out safely');
}
