// `npm run demo`: a demo team with two weeks of a realistic experiment (server/cli/demo-command.ts).
import { Presets, SingleBar } from 'cli-progress';
import { runningServerAt, urlOf } from '../address';
import { settingsFromEnv } from '../settings/settings';
import { openStorage } from '../storage/database';
import { runDemo } from './demo-command';

const settings = settingsFromEnv();
process.exitCode = await runDemo(process.argv.slice(2), {
  out: (text) => console.log(text),
  err: (text) => console.error(text),
  open: () => openStorage(settings),
  baseUrl: (settings.databaseUrl ? undefined : await runningServerAt(settings.dataDir)) ?? urlOf(settings.host, settings.port),
  progress: (total) => {
    const bar = new SingleBar({ format: '  {bar} {percentage}% | {value}/{total} participants | {eta}s left', hideCursor: true }, Presets.shades_classic);
    bar.start(total, 0);
    return { update: (done) => bar.update(done), stop: () => bar.stop() };
  },
  random: Math.random,
});
