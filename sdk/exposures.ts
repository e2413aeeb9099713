// Which participant–experiment and participant–rollout exposures this process has queued, so
// that each goes out once. Bounded: past `capacity` the oldest are forgotten (a forgotten one
// sent again is a duplicate exposure, which the service stores as the same enrolment or first
// exposure — never a second participant).

export interface Exposures {
  /** True the first time the pair is seen (it is then remembered); `exposedTo` names an experiment or a rollout. */
  firstTime(participant: string, exposedTo: string): boolean;
}

export function rememberExposures(capacity: number): Exposures {
  const seen = new Set<string>();
  return {
    firstTime(participant, exposedTo) {
      // A key cannot contain a newline, so the pair is unambiguous.
      const pair = `${exposedTo}\n${participant}`;
      if (seen.has(pair)) return false;
      seen.add(pair);
      if (seen.size > capacity) seen.delete(seen.values().next().value!);
      return true;
    },
  };
}
