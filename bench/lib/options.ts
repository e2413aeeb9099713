import { parseArgs } from 'node:util';
import { READS, type Read } from '../phases/reads';

export type Engine = 'sqlite' | 'postgres';
export const PHASES = ['baselines', 'libraries', 'assignment', 'ingest', 'reads', 'layers', 'growth', 'isolation', 'processes', 'soak'] as const;
export type Phase = (typeof PHASES)[number];

export interface Options {
  quick: boolean;
  rounds: number;
  /** Seconds per measured round. */
  duration: number;
  /** Seconds of unmeasured load before the rounds of each measurement. */
  warmup: number;
  connections: number;
  /** undefined: SQLite, and PostgreSQL when it answers. */
  engines?: Engine[];
  /** Recorded events for the big growth measurement. */
  events: number;
  soakSeconds: number;
  phases: Set<Phase>;
  /** The reads the reads phase measures (all three unless --reads names some: a profile of one). */
  reads: Read[];
  /** Run the real servers under `node --cpu-prof`; profiles land in bench/results/. */
  cpuProf: boolean;
  /** Where the JSON goes. */
  out: string;
}

const USAGE = `npm run bench -- [--quick] [--rounds N] [--duration S] [--warmup S] [--connections N]
                   [--engines sqlite,postgres] [--events N] [--phases ${PHASES.join(',')}]
                   [--reads ${READS.join(',')}] [--soak] [--soak-seconds S] [--cpu-prof] [--out FILE]`;

export function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      engines: { type: 'string' },
      events: { type: 'string' },
      phases: { type: 'string' },
      reads: { type: 'string' },
      soak: { type: 'boolean', default: false },
      'soak-seconds': { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      out: { type: 'string', default: 'bench/results/latest.json' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = values.quick ?? false;
  // A quick run leaves out the libraries, layers and processes phases too (five, four and two more servers), to stay under a minute.
  const byDefault = PHASES.filter((phase) => phase !== 'soak' && !(quick && (phase === 'libraries' || phase === 'layers' || phase === 'processes')));
  const phases = new Set<Phase>(values.phases ? list(values.phases, PHASES, 'phase') : byDefault);
  if (values.soak || values['soak-seconds']) phases.add('soak');
  return {
    quick,
    rounds: positive(values.rounds, quick ? 1 : 3, 'rounds'),
    duration: positive(values.duration, quick ? 0.5 : 5, 'duration'),
    warmup: positive(values.warmup, quick ? 0.2 : 2, 'warmup'),
    connections: positive(values.connections, 10, 'connections'),
    engines: values.engines ? list(values.engines, ['sqlite', 'postgres'] as const, 'engine') : undefined,
    events: positive(values.events, quick ? 3_000 : 1_000_000, 'events'),
    soakSeconds: positive(values['soak-seconds'], 300, 'soak-seconds'),
    phases,
    reads: values.reads ? list(values.reads, READS, 'read') : [...READS],
    cpuProf: values['cpu-prof'] ?? false,
    out: values.out ?? 'bench/results/latest.json',
  };
}

function positive(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!(number > 0)) throw new Error(`--${name} must be a positive number, not '${value}'.\n${USAGE}`);
  return number;
}

function list<T extends string>(value: string, allowed: readonly T[], name: string): T[] {
  const items = value.split(',').map((item) => item.trim()).filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T)) throw new Error(`Unknown ${name} '${item}'; one of ${allowed.join(', ')}.\n${USAGE}`);
  }
  return items as T[];
}
