// The kit's safe rollouts, on its own flag: one created, paused, resumed and rolled back (the flag
// keeps its value), a second released (the flag's value becomes the new one).
import type { Session } from './session';

const ROLLOUTS = '/api/teams/{team}/features/{feature}/rollouts';
const ROLLOUT = `${ROLLOUTS}/{rollout}`;

export async function rollouts(session: Session, path: { team: number }, key: string) {
  const feature = { ...path, feature: key };
  const first = { ...feature, rollout: '1' };
  const steps = [
    { percentage: 50, hold_seconds: 0, minimum_exposures: 0 },
    { percentage: 100, hold_seconds: 0, minimum_exposures: 0 },
  ];
  const created = await session.call({ purpose: "creates a rollout of the kit's flag", operation: `POST ${ROLLOUTS}`, path: feature, body: { value: 'rolled out safely', steps }, expect: 200 });
  session.expectThat(`POST ${ROLLOUTS}`, 'it runs at its first step with a 32-hex seed', created?.data?.state === 'running' && created?.data?.share === 50 && /^[0-9a-f]{32}$/.test(String(created?.data?.seed)));
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
  await session.call({ purpose: 'creates a second rollout', operation: `POST ${ROLLOUTS}`, path: feature, body: { value: 'rolled out safely', steps }, expect: 200 });
  const released = await session.call({ purpose: 'releases it', operation: `POST ${ROLLOUT}/release`, path: { ...feature, rollout: '2' }, expect: 200 });
  session.expectThat(`POST ${ROLLOUT}/release`, 'it is released at 100 %', released?.data?.state === 'released' && released?.data?.share === 100);
  const flag = await session.call({ purpose: 'the flag after the release', operation: 'GET /api/teams/{team}/features/{feature}', path: feature, expect: 200 });
  session.expectThat(`POST ${ROLLOUT}/release`, "the flag's value is the released one", flag?.data?.value === 'rolled out safely');
}
