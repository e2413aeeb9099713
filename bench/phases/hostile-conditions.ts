// The hostile conditions of issue #37 (items 3 and 4) for bench/fairness.ts: teams of 50 running
// experiments whose conditions are as costly as validation lets them be, and the ingest batches of
// 20 participants that make the server evaluate them. Each `conditions` shape is valid; what it
// costs is bounded by the steps of one evaluation (Condition.yaml, "Cost").

/** Sends an authenticated JSON request and fails unless it answers 200. */
export type Call = (credential: string, method: string, path: string, body?: unknown) => Promise<unknown>;

export interface HostileShape {
  label: string;
  conditions: (experiment: number) => unknown;
  /** A participant's attributes, new for each participant (so nothing is decided from a cache). */
  attributes: () => Record<string, unknown>;
}

let seed = 37;
const randomAB = (length: number) =>
  Array.from({ length }, () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed < 1073741824 ? 'a' : 'b';
  }).join('');

/** 24 instructions; the class's last rune differs by experiment and position, so each pattern is its own. */
const pattern = (experiment: number, position: number) => `a[ab]{20}[^ab,\\x{${(0x100 + experiment * 20 + position).toString(16)}}]`;
const patterns = (experiment: number) => ({ $nor: Array.from({ length: 20 }, (_, position) => ({ t: { $regex: pattern(experiment, position) } })) });

export const HOSTILE_SHAPES: HostileShape[] = [
  {
    label: 'item 4: $nor of 999 literals, 20 KB array attribute',
    conditions: () => ({ $nor: Array.from({ length: 999 }, () => ({ t: 'q' })) }),
    attributes: () => ({ t: Array.from({ length: 100 }, () => 'x'.repeat(200)) }),
  },
  {
    label: 'item 3: 20 patterns of 24 instructions, 20 KB random a/b array attribute',
    conditions: patterns,
    attributes: () => ({ t: Array.from({ length: 100 }, () => randomAB(200)) }),
  },
  {
    // The longest text a 24-instruction pattern may read within the steps: 2 + (207 + 1) × 24 × 4 ≤ 20 000.
    label: 'item 3, sized to the steps: the same patterns, 207 random a/b characters',
    conditions: patterns,
    attributes: () => ({ t: randomAB(207) }),
  },
];

/** A team's 50 running experiments on event `goal`, two variants each, under the shape's conditions. */
export async function hostileExperiments(call: Call, team: { id: number; token: string }, shape: HostileShape): Promise<void> {
  const path = `/api/teams/${team.id}/experiments`;
  await call(team.token, 'POST', `/api/teams/${team.id}/events`, { key: 'goal' });
  for (let i = 0; i < 50; i++) {
    const key = `hostile_${i}`;
    await call(team.token, 'POST', path, { key, event: 'goal', conditions: shape.conditions(i) });
    for (let v = 0; v < 2; v++) await call(team.token, 'POST', `${path}/${key}/variants`, { key: `v${v}`, control: v === 0 });
    await call(team.token, 'POST', `${path}/${key}/start`);
  }
}

/** A batch of 20 new participants with the shape's attributes, each evaluated against the 50 experiments. */
export function hostileBatch(shape: HostileShape, fresh: () => string): unknown {
  return { items: Array.from({ length: 20 }, () => ({ participant: { key: fresh(), attributes: shape.attributes() }, event: 'goal' })) };
}
