// The SDK (`experimentation-api/sdk`): decisions made locally from the team's config, kept fresh
// by the config stream (polling as the fallback), and exposures and events delivered in batches,
// exactly once. Bundled into generated/sdk.js by scripts/generate.ts.
import { startClient } from './client';
import type { Client, ClientOptions } from './types';

export type { Attributes, Client, ClientOptions, Config, ConfigFeature, ConfigStatus, DeliveryStats, FeatureDetails, FlagValue, IngestItem, SdkError } from './types';

/** A client for one team: starts reading the config at once. */
export function createClient(options: ClientOptions): Client {
  return startClient(options);
}
