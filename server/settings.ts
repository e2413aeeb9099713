import { resolve } from 'node:path';

export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  validateResponses: boolean;
  logLevel: string;
}

/** Reads the environment once, at start-up. */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): Settings {
  return {
    port: Number(env.PORT ?? 3000),
    host: env.HOST ?? '127.0.0.1',
    dataDir: resolve(env.DATA_DIR ?? 'data'),
    databaseUrl: env.DATABASE_URL || undefined,
    validateResponses: env.VALIDATE_RESPONSES === 'true',
    logLevel: env.LOG_LEVEL ?? 'info',
  };
}
