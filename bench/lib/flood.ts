import { Worker } from 'node:worker_threads';

export interface Flood {
  /** Stops the flood; answers how many 2xx and other answers per second it got. */
  stop(): Promise<{ answersPerSecond: number }>;
}

/** `connections` keep reading `url` as fast as the server answers, from a worker thread, until stopped. */
export function flood(url: string, headers: Record<string, string>, connections: number): Flood {
  const worker = new Worker(new URL('./flood-worker.mjs', import.meta.url), { workerData: { url, headers, connections } });
  const done = new Promise<{ answers: number; seconds: number }>((resolve, reject) => {
    worker.once('message', (message: { answers: number; seconds: number; error?: string }) => (message.error ? reject(new Error(message.error)) : resolve(message)));
    worker.once('error', reject);
  });
  return {
    async stop() {
      worker.postMessage('stop');
      const { answers, seconds } = await done;
      await worker.terminate();
      return { answersPerSecond: answers / seconds };
    },
  };
}
