// A flood of requests from a worker thread, so that its answers (hundreds of kilobytes a second)
// are read on another CPU than the measurements made in the bench's main thread. Plain JavaScript:
// a worker thread does not get the TypeScript loader the bench runs under.
import { parentPort, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';

const { url, headers, connections } = workerData;
const started = performance.now();
let answered = 0;
const instance = autocannon({ url, headers, connections, duration: 3600 }, (error) => {
  parentPort.postMessage(error ? { error: String(error) } : { answers: answered, seconds: (performance.now() - started) / 1000 });
});
instance.on('response', (_client, statusCode) => {
  if (statusCode >= 200 && statusCode < 300) answered++;
});
parentPort.once('message', () => instance.stop());
