// `npm run admin -- <command> …`: the operators' command line (server/cli/admin-command.ts).
import { readFileSync } from 'node:fs';
import { settingsFromEnv } from '../settings/settings';
import { openStorage } from '../storage/database';
import { runAdmin } from './admin-command';

process.exitCode = await runAdmin(process.argv.slice(2), {
  out: (text) => console.log(text),
  err: (text) => console.error(text),
  stdin: () => readFileSync(0, 'utf8'),
  open: () => openStorage(settingsFromEnv()),
});
