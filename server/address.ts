import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where a started server answers, written to its data directory (`DATA_DIR/address`) when it
 * listens and removed when it stops, so that `npm run demo` and the admin CLI, started in
 * another terminal on the same settings, print links to the server's real port.
 */
const fileIn = (dataDir: string) => join(dataDir, 'address');

export function recordAddress(dataDir: string, baseUrl: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(fileIn(dataDir), `${baseUrl}\n`);
  return () => rmSync(fileIn(dataDir), { force: true });
}

/** The address a running server recorded, if it answers its health check there; else undefined. */
export async function runningServerAt(dataDir: string): Promise<string | undefined> {
  let recorded: string;
  try {
    recorded = readFileSync(fileIn(dataDir), 'utf8').trim();
  } catch {
    return undefined;
  }
  try {
    const answer = await fetch(`${recorded}/api/health`, { signal: AbortSignal.timeout(2000) });
    return answer.ok ? recorded : undefined;
  } catch {
    return undefined;
  }
}

/** The URL to open for a server listening on host:port (a wildcard host is reached on the loopback address). */
export function urlOf(host: string, port: number): string {
  const reached = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reached.includes(':') ? `[${reached}]` : reached}:${port}`;
}
