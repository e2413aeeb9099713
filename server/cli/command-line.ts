import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Storage } from '../storage/database';

/** Prints what is wrong and the usage, and exits 2. */
export type Fail = (message: string) => never;

export function failing(usage: string): Fail {
  return (message) => {
    console.error(`${message}\n\n${usage}`);
    process.exit(2);
  };
}

/** A command line that ends the command before it runs: `--help` (code 0, the usage) or a usage error (code 2). */
export class CommandLineExit extends Error {
  constructor(
    readonly code: 0 | 2,
    readonly text: string,
  ) {
    super(text);
  }
}

/** For a command run in process: a usage error is thrown as a CommandLineExit instead of exiting. */
export function refusing(usage: string): Fail {
  return (message) => {
    throw new CommandLineExit(2, `${message}\n\n${usage}`);
  };
}

/** For a command run in process: prints the usage (`--help`, 0) or the usage error (2) and answers that exit code; rethrows any other error. */
export function commandLineExit(error: unknown, io: { out(text: string): void; err(text: string): void }): 0 | 2 {
  if (!(error instanceof CommandLineExit)) throw error;
  (error.code === 0 ? io.out : io.err)(error.text);
  return error.code;
}

/** Opens the storage, runs `work` on it and closes it: exit code 0 when it is done, 1 with its message on stderr when it failed. */
export async function onStorage(io: { open(): Promise<Storage>; err(text: string): void }, work: (storage: Storage) => Promise<void>): Promise<0 | 1> {
  const storage = await io.open();
  try {
    await work(storage);
    return 0;
  } catch (error) {
    io.err(error instanceof Error ? error.message : String(error));
    return 1;
  } finally {
    await storage.close();
  }
}

/**
 * The command line read with node:util's parseArgs: `--help` prints the usage and exits 0 (or,
 * given `args` — a command run in process — throws CommandLineExit(0)); an unknown or malformed
 * option is a `fail`. (Callers declare `fail` with its type, `const fail: Fail = failing(usage)`,
 * so that TypeScript knows it does not return.)
 */
export function readCommandLine<const Options extends NonNullable<ParseArgsConfig['options']>>(usage: string, fail: Fail, options: Options, args?: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  if ((parsed.values as Record<string, unknown>).help) {
    if (args) throw new CommandLineExit(0, usage);
    console.log(usage);
    process.exit(0);
  }
  return parsed;
}
