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
  /**
   * The V8 heap still live after a full garbage collection (`--trace-gc`, Mark-Compact), in MiB:
   * the first one after the warm-up and the last one of the soak. (The last one of the warm-up
   * may be from before the server built its working set: on a slow machine the warm-up's ingest
   * can leave the start-up collection the only full one.) Unlike RSS, which also holds what the
   * collector freed but has not given back yet, it grows only with a leak.
   */
  liveHeapAfterWarmupMb?: number;
  liveHeapAtEndMb?: number;
  /** [seconds into the soak, MiB live after each full collection]. */
  fullCollections: Array<[number, number]>;
  load: RoundResult;
}

/** `[pid:0x…]   5123 ms: Mark-Compact 38.2 (52.1) -> 30.4 (51.0) MB, …`: the heap used after it. */
const MARK_COMPACT = /Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/;

/** RSS of a fresh server at start, after a warm-up of ingest, and after `--soak-seconds` of ingest. */
export async function soakPhase(engine: Engine, options: Options): Promise<SoakResult> {
  let started = 0;
  let liveHeapMb: number | undefined;
  const fullCollections: Array<[number, number]> = [];
  const onStdoutLine = (line: string) => {
    const match = MARK_COMPACT.exec(line);
    if (!match) return;
    liveHeapMb = Number(match[1]);
    if (started) fullCollections.push([Math.round((performance.now() - started) / 1000), liveHeapMb]);
  };
  const env = await startEnvironment(engine, 'soak', { cpuProf: options.cpuProf, nodeArgs: ['--trace-gc'], onStdoutLine });
  try {
    const rssAtStartKb = env.rssAtReadyKb;
    const warmup = Math.max(5, Math.min(30, options.soakSeconds / 10));
    progress(`soak ${engine}: RSS at start ${mb(rssAtStartKb)}; ${warmup} s of warm-up ingest`);
    await load({ ...ingestSpec(env, options), duration: warmup });
    const rssAfterWarmupKb = env.server.rssKb();
    progress(`soak ${engine}: RSS after warm-up ${mb(rssAfterWarmupKb)}, live heap at the last full collection ${heap(liveHeapMb)}; ${options.soakSeconds} s of ingest`);

    const samples: Array<[number, number]> = [];
    let peak = rssAfterWarmupKb;
    let responses = 0;
    started = performance.now();
    const timer = setInterval(() => {
      const rss = env.server.rssKb();
      const at = Math.round((performance.now() - started) / 1000);
      peak = Math.max(peak, rss);
      samples.push([at, rss]);
      if (samples.length % 3 === 0) progress(`soak ${engine}: ${at}/${options.soakSeconds} s, ${responses.toLocaleString('en-US')} requests, RSS ${mb(rss)}, live heap ${heap(liveHeapMb)}`);
    }, 10_000);
    const result = await load({ ...ingestSpec(env, options), duration: options.soakSeconds }, () => responses++).finally(() => clearInterval(timer));
    const rssAtEndKb = env.server.rssKb();
    const liveHeapAfterWarmupMb = fullCollections[0]?.[1];
    const liveHeapAtEndMb = fullCollections.at(-1)?.[1];
    progress(`soak ${engine}: done  ${describeRound(result)}  RSS at end ${mb(rssAtEndKb)}, live heap ${heap(liveHeapAtEndMb)}`);
    return {
      seconds: options.soakSeconds,
      rssAtStartKb,
      rssAfterWarmupKb,
      rssAtEndKb,
      rssPeakKb: Math.max(peak, rssAtEndKb),
      samples,
      liveHeapAfterWarmupMb,
      liveHeapAtEndMb,
      fullCollections,
      load: result,
    };
  } finally {
    await env.close();
  }
}

function heap(mb: number | undefined): string {
  return mb === undefined ? 'n/a (no full collection yet)' : `${mb.toFixed(1)} MiB`;
}

export function mb(kb: number): string {
  return `${(kb / 1024).toFixed(1)} MiB`;
}
