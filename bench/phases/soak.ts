import { startEnvironment } from '../lib/environment';
import { describeRound, load, progress, type RoundResult } from '../lib/load';
import type { Engine, Options } from '../lib/options';
import { ingestSpec } from './ingest';

export interface SoakResult {
  seconds: number;
  /** KiB, from /proc/<pid>/status VmRSS. */
  rssAtStartKb: number;
  rssAfterWarmupKb: number;
  rssAtEndKb: number;
  rssPeakKb: number;
  /** [seconds into the soak, KiB] every 10 s. */
  samples: Array<[number, number]>;
  load: RoundResult;
}

/** RSS of a fresh server at start, after a warm-up of ingest, and after `--soak-seconds` of ingest. */
export async function soakPhase(engine: Engine, options: Options): Promise<SoakResult> {
  const env = await startEnvironment(engine, 'soak', { cpuProf: options.cpuProf });
  try {
    const rssAtStartKb = env.rssAtReadyKb;
    const warmup = Math.max(5, Math.min(30, options.soakSeconds / 10));
    progress(`soak ${engine}: RSS at start ${mb(rssAtStartKb)}; ${warmup} s of warm-up ingest`);
    await load({ ...ingestSpec(env, options), duration: warmup });
    const rssAfterWarmupKb = env.server.rssKb();
    progress(`soak ${engine}: RSS after warm-up ${mb(rssAfterWarmupKb)}; ${options.soakSeconds} s of ingest`);

    const samples: Array<[number, number]> = [];
    let peak = rssAfterWarmupKb;
    let responses = 0;
    const started = performance.now();
    const timer = setInterval(() => {
      const rss = env.server.rssKb();
      const at = Math.round((performance.now() - started) / 1000);
      peak = Math.max(peak, rss);
      samples.push([at, rss]);
      if (samples.length % 3 === 0) progress(`soak ${engine}: ${at}/${options.soakSeconds} s, ${responses.toLocaleString('en-US')} requests, RSS ${mb(rss)}`);
    }, 10_000);
    const result = await load({ ...ingestSpec(env, options), duration: options.soakSeconds }, () => responses++).finally(() => clearInterval(timer));
    const rssAtEndKb = env.server.rssKb();
    progress(`soak ${engine}: done  ${describeRound(result)}  RSS at end ${mb(rssAtEndKb)}`);
    return { seconds: options.soakSeconds, rssAtStartKb, rssAfterWarmupKb, rssAtEndKb, rssPeakKb: Math.max(peak, rssAtEndKb), samples, load: result };
  } finally {
    await env.close();
  }
}

export function mb(kb: number): string {
  return `${(kb / 1024).toFixed(1)} MiB`;
}
