import { readFileSync } from 'node:fs';

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  /** Percent of all sampled time spent in this function itself (self time). */
  percent: number;
  function: string;
  location: string;
}

/** The functions with the most self time in a V8 .cpuprofile (from `node --cpu-prof`). */
export function topSelfTime(path: string, count = 15): ProfileLine[] {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const byFunction = new Map<string, ProfileLine & { micros: number }>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const micros = profile.timeDeltas[i] ?? 0;
    total += micros;
    const frame = nodes.get(id)!.callFrame;
    const location = frame.url ? `${frame.url.replace(/^file:\/\/.*?\/(node_modules|server|bench)\//, '$1/')}:${frame.lineNumber + 1}` : '';
    const key = `${frame.functionName}@${location}`;
    const entry = byFunction.get(key) ?? { percent: 0, function: frame.functionName || '(anonymous)', location, micros: 0 };
    entry.micros += micros;
    byFunction.set(key, entry);
  });
  return [...byFunction.values()]
    .sort((a, b) => b.micros - a.micros)
    .slice(0, count)
    .map(({ micros, ...line }) => ({ ...line, percent: (100 * micros) / total }));
}
