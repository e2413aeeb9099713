import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Prints what is wrong and the usage, and exits 2. */
export type Fail = (message: string) => never;

export function failing(usage: string): Fail {
  return (message) => {
    console.error(`${message}\n\n${usage}`);
    process.exit(2);
  };
}

/**
 * The command line read with node:util's parseArgs: `--help` prints the usage and exits 0; an
 * unknown or malformed option is a `fail`. (Callers declare `fail` with its type, `const fail:
 * Fail = failing(usage)`, so that TypeScript knows it does not return.)
 */
export function readCommandLine<const Options extends NonNullable<ParseArgsConfig['options']>>(usage: string, fail: Fail, options: Options) {
  let parsed;
  try {
    parsed = parseArgs({ allowPositionals: true, options });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  if ((parsed.values as Record<string, unknown>).help) {
    console.log(usage);
    process.exit(0);
  }
  return parsed;
}
