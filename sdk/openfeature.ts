// The package's OpenFeature providers (`experimentation-api/openfeature`): a server provider for
// @openfeature/server-sdk and a web provider for @openfeature/web-sdk, both running the package's
// SDK — decisions made locally from the team's config, kept fresh by the config stream;
// exposures queued when a flag reaches an experiment's rule or its safe rollout decides;
// track() sent to the ingest.
// Bundled into generated/openfeature.js by scripts/generate.ts, importing the SDK from ./sdk.js.
import type { EvaluationContext, JsonValue, Logger, ProviderEventEmitter, AnyProviderEvent, ResolutionDetails, TrackingEventDetails } from '@openfeature/core';
import { createClient } from './index';
import { ProviderEvents, resolveFlag, startProviderClient, trackEvent } from './openfeature-resolve';
import type { Client, ClientOptions } from './types';

/** What a provider needs: the SDK's options (the service, the team, its ingest key, and the rest). */
export type ProviderOptions = ClientOptions;

abstract class ExperimentationProvider {
  readonly metadata = { name: 'experimentation-api' } as const;
  readonly events: ProviderEventEmitter<AnyProviderEvent> = new ProviderEvents();
  /** The SDK's client the provider decides with: its experiment(), flush() and stats() are there too. */
  readonly client: Client;
  private readonly start: () => Promise<void>;

  constructor(options: ProviderOptions) {
    const started = startProviderClient(createClient, options, this.events as ProviderEvents);
    this.client = started.client;
    this.start = started.initialize;
  }

  /** Resolves with the team's first config; rejects when the service refuses the ingest key (PROVIDER_FATAL) or cannot be read (ERROR, then READY with the first config). */
  initialize(): Promise<void> {
    return this.start();
  }

  /** Sends what is queued (exposures, events) and stops the config stream. */
  onClose(): Promise<void> {
    return this.client.close();
  }

  /** An ingest event for the context's targetingKey; `value` from the details. */
  track(trackingEventName: string, context: EvaluationContext, trackingEventDetails: TrackingEventDetails): void {
    trackEvent(this.client, trackingEventName, context, trackingEventDetails);
  }
}

/** The provider for @openfeature/server-sdk: `await OpenFeature.setProviderAndWait(new ExperimentationServerProvider({ … }))`. */
export class ExperimentationServerProvider extends ExperimentationProvider {
  readonly runsOn = 'server' as const;

  async resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext, _logger?: Logger): Promise<ResolutionDetails<boolean>> {
    return resolveFlag(this.client, flagKey, 'boolean', defaultValue, context);
  }

  async resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext, _logger?: Logger): Promise<ResolutionDetails<string>> {
    return resolveFlag(this.client, flagKey, 'string', defaultValue, context);
  }

  async resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext, _logger?: Logger): Promise<ResolutionDetails<number>> {
    return resolveFlag(this.client, flagKey, 'number', defaultValue, context);
  }

  async resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext, _logger?: Logger): Promise<ResolutionDetails<T>> {
    return resolveFlag(this.client, flagKey, 'object', defaultValue, context);
  }
}

/**
 * The provider for @openfeature/web-sdk (static context: OpenFeature.setContext() names the
 * visitor): `await OpenFeature.setProviderAndWait(new ExperimentationWebProvider({ … }))`. A
 * context change needs no request: decisions are local.
 */
export class ExperimentationWebProvider extends ExperimentationProvider {
  readonly runsOn = 'client' as const;

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext, _logger?: Logger): ResolutionDetails<boolean> {
    return resolveFlag(this.client, flagKey, 'boolean', defaultValue, context);
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext, _logger?: Logger): ResolutionDetails<string> {
    return resolveFlag(this.client, flagKey, 'string', defaultValue, context);
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext, _logger?: Logger): ResolutionDetails<number> {
    return resolveFlag(this.client, flagKey, 'number', defaultValue, context);
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext, _logger?: Logger): ResolutionDetails<T> {
    return resolveFlag(this.client, flagKey, 'object', defaultValue, context);
  }
}
