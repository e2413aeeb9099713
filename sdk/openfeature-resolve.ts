// What the package's two OpenFeature providers share: a flag resolved through the SDK's
// featureDetails() in OpenFeature's terms, the evaluation context read as a participant and its
// attributes, track() as an ingest event, and the provider's events from the SDK's config status.
// Only types come from @openfeature/core (the error codes and events are its string values), so
// that neither OpenFeature SDK is loaded by the other's users.
import type { AnyProviderEvent, EvaluationContext, EventContext, EventHandler, FlagValueType, Logger, ProviderEventEmitter, ResolutionDetails, TrackingEventDetails } from '@openfeature/core';
import { openFeatureResolution } from '../domain/openfeature';
import type { Attributes, Client, ClientOptions, FlagValue } from './types';

type ErrorCode = 'PROVIDER_NOT_READY' | 'FLAG_NOT_FOUND' | 'PARSE_ERROR' | 'TYPE_MISMATCH' | 'TARGETING_KEY_MISSING' | 'INVALID_CONTEXT' | 'GENERAL';

/** The flag type each OpenFeature value type reads. */
const FLAG_TYPES: Record<FlagValueType, string> = { boolean: 'boolean', string: 'string', number: 'number', object: 'json' };
// eslint-disable-next-line no-control-regex
const NOT_IN_A_KEY = /[\s/\x00-\x1F\x7F-\x9F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;
/** Attributes as the contract bounds them; more is an INVALID_CONTEXT (the service would refuse the exposure). */
const MAX_ATTRIBUTES = 50;

function failed<T>(defaultValue: T, errorCode: ErrorCode, errorMessage: string): ResolutionDetails<T> {
  return { value: defaultValue, reason: 'ERROR', errorCode: errorCode as ResolutionDetails<T>['errorCode'], errorMessage };
}

/** The flag resolved for the context, exposures queued as feature() queues them. */
export function resolveFlag<T>(client: Client, flagKey: string, type: FlagValueType, defaultValue: T, context: EvaluationContext): ResolutionDetails<T> {
  const config = client.config();
  if (!config) return failed(defaultValue, 'PROVIDER_NOT_READY', 'no config has been read from the service yet');
  const participant = participantOf(context);
  if (participant.problem) return failed(defaultValue, 'INVALID_CONTEXT', participant.problem);
  // Without a participant, a flag that needs one is refused before anything is decided: no exposure is queued for nobody.
  if (participant.key === undefined) {
    const flag = config.features.find((candidate) => candidate.key === flagKey);
    if (!flag) return failed(defaultValue, 'FLAG_NOT_FOUND', `no flag ${flagKey} in the team's config`);
    if (isMismatch(flag, type)) return failed(defaultValue, 'TYPE_MISMATCH', `${flagKey} is a ${flag.type ?? 'string'} flag, read as ${type}`);
    if (needsParticipant(flag)) return failed(defaultValue, 'TARGETING_KEY_MISSING', `${flagKey} has a rollout or experiment rule: the context needs a targetingKey`);
  }
  const details = client.featureDetails<FlagValue>(flagKey, participant.key ?? '', participant.attributes);
  if (!details) {
    return config.features.some((flag) => flag.key === flagKey)
      ? failed(defaultValue, 'GENERAL', `the decision for ${flagKey} failed`)
      : failed(defaultValue, 'FLAG_NOT_FOUND', `no flag ${flagKey} in the team's config`);
  }
  const flagType = details.flag.type ?? 'string';
  if (isMismatch(details.flag, type)) return failed(defaultValue, 'TYPE_MISMATCH', `${flagKey} is a ${flagType} flag, read as ${type}`);
  if (details.value === null && details.text !== null) return failed(defaultValue, 'PARSE_ERROR', `${flagKey}'s value does not read as a ${flagType}`);
  const resolution = openFeatureResolution(details.flag, details, details.experiment);
  const resolved: ResolutionDetails<T> = { value: details.value === null ? defaultValue : (details.value as T), reason: resolution.reason };
  if (resolution.variant !== undefined) resolved.variant = resolution.variant;
  if (resolution.metadata !== undefined) resolved.flagMetadata = resolution.metadata;
  return resolved;
}

/** The flag's type is not the one the value is read as (TYPE_MISMATCH). */
const isMismatch = (flag: { type?: string | null }, type: FlagValueType) => (flag.type ?? 'string') !== FLAG_TYPES[type];

/** A rollout's, a safe rollout's or an experiment's decision depends on who the participant is. */
function needsParticipant(flag: { enabled: boolean; rules?: Array<{ type: string }> | null; rollout?: object | null }): boolean {
  return flag.enabled && (flag.rollout != null || (flag.rules ?? []).some((rule) => rule.type === 'rollout' || rule.type === 'experiment'));
}

/**
 * `targetingKey` is the participant; every other key is an attribute: strings, numbers, booleans,
 * dates (as RFC 3339 text) and arrays of those. Objects, null and nested arrays are not
 * attributes (INVALID_CONTEXT), nor is a targetingKey the service would refuse.
 */
export function participantOf(context: EvaluationContext): { key?: string; attributes?: Attributes; problem?: string } {
  // A copy of the whole context (one step for an object of a known shape), its targetingKey then
  // made undefined: conditions read an undefined attribute as absent, and JSON leaves it out of an exposure.
  const attributes = { ...context } as Record<string, Attributes[string] | undefined>;
  let count = 0;
  for (const name in attributes) {
    const value = attributes[name];
    if (value === undefined || name === 'targetingKey') continue;
    if (typeof value !== 'string' && typeof value !== 'boolean' && !readAttribute(attributes, name, value)) return notAnAttribute(name);
    count++;
  }
  const key = context.targetingKey;
  if (key !== undefined) attributes.targetingKey = undefined;
  if (count > MAX_ATTRIBUTES || (key !== undefined && key !== '' && !isParticipantKey(key))) return contextProblem(count);
  return { key: key || undefined, attributes: count > 0 ? (attributes as Attributes) : undefined };
}

// The problems are told apart from the hot path, which stays small.
const notAnAttribute = (name: string) => ({ problem: `context key ${name} must be a string, number, boolean, date or an array of those` });
const contextProblem = (count: number) => ({
  problem: count > MAX_ATTRIBUTES ? `the context has ${count} attributes; at most ${MAX_ATTRIBUTES}` : 'targetingKey must be a participant key: 1–255 characters, no whitespace, no / and no control characters',
});
const isParticipantKey = (key: unknown) => typeof key === 'string' && key.length <= 255 && !NOT_IN_A_KEY.test(key);

/** Puts the attribute's value as the service reads it (a date as its text) in place; false when it is not an attribute. */
function readAttribute(attributes: Record<string, unknown>, name: string, value: unknown): boolean {
  const read = attributeOf(value);
  if (read === undefined) return false;
  attributes[name] = read;
  return true;
}

type Scalar = string | number | boolean;

function scalarOf(value: unknown): Scalar | undefined {
  if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
  return undefined;
}

function attributeOf(value: unknown): Attributes[string] | undefined {
  if (!Array.isArray(value)) return scalarOf(value);
  const items = value.map(scalarOf);
  return items.every((item) => item !== undefined) ? (items as Scalar[]) : undefined;
}

/** OpenFeature's track(): an ingest event for the context's participant, `value` from the details. */
export function trackEvent(client: Client, eventName: string, context: EvaluationContext, details: TrackingEventDetails | undefined): void {
  const participant = participantOf(context);
  if (participant.problem) throw Object.assign(new Error(participant.problem), { code: 'INVALID_CONTEXT' });
  if (participant.key === undefined) throw Object.assign(new Error('track() needs the context\'s targetingKey: the participant'), { code: 'TARGETING_KEY_MISSING' });
  const value = details?.value;
  client.track(participant.key, eventName, typeof value === 'number' && Number.isFinite(value) ? value : undefined);
}

/** The provider's event emitter, as OpenFeature's SDKs listen to it. */
export class ProviderEvents implements ProviderEventEmitter<AnyProviderEvent> {
  private readonly handlers = new Map<AnyProviderEvent, EventHandler[]>();
  private logger?: Logger;

  emit(eventType: AnyProviderEvent, context?: EventContext): void {
    for (const handler of [...(this.handlers.get(eventType) ?? [])]) {
      try {
        const result = handler(context as never);
        if (result instanceof Promise) result.catch((error: unknown) => this.logger?.error(`${eventType} handler failed:`, error));
      } catch (error) {
        this.logger?.error(`${eventType} handler failed:`, error);
      }
    }
  }

  addHandler(eventType: AnyProviderEvent, handler: EventHandler): void {
    this.handlers.set(eventType, [...(this.handlers.get(eventType) ?? []), handler]);
  }

  removeHandler(eventType: AnyProviderEvent, handler: EventHandler): void {
    this.handlers.set(eventType, (this.handlers.get(eventType) ?? []).filter((existing) => existing !== handler));
  }

  removeAllHandlers(eventType?: AnyProviderEvent): void {
    if (eventType === undefined) this.handlers.clear();
    else this.handlers.delete(eventType);
  }

  getHandlers(eventType: AnyProviderEvent): EventHandler[] {
    return [...(this.handlers.get(eventType) ?? [])];
  }

  setLogger(logger: Logger): this {
    this.logger = logger;
    return this;
  }
}

const event = (name: string) => name as AnyProviderEvent;

/**
 * The SDK's client as a provider runs it, and the provider's events from it: initialize()
 * resolves with the first config and rejects when the service refuses the ingest key
 * (PROVIDER_FATAL) or the first read fails (ERROR; READY follows the first config). Then:
 * CONFIGURATION_CHANGED for each config taken, STALE when the config could not be read or
 * checked, READY when it is current again, ERROR (PROVIDER_FATAL) when the key is refused.
 */
export function startProviderClient(createClient: (options: ClientOptions) => Client, options: ClientOptions, events: ProviderEvents): { client: Client; initialize(): Promise<void> } {
  let phase: 'starting' | 'failed' | 'running' = 'starting';
  let stale = false;
  let failStart: (error: Error) => void = () => undefined;
  const startFailed = new Promise<never>((_, reject) => (failStart = reject));
  startFailed.catch(() => undefined);
  const client = createClient({
    ...options,
    onError(error) {
      options.onError?.(error);
      if (error.kind !== 'config') return;
      const refused = error.status === 401 || error.status === 403;
      if (phase === 'starting') {
        phase = 'failed';
        failStart(Object.assign(new Error(`the config could not be read: ${error.message}`), { code: refused ? 'PROVIDER_FATAL' : 'GENERAL' }));
      } else if (phase === 'running' && refused) {
        stale = true;
        events.emit(event('PROVIDER_ERROR'), { message: `the service refused the ingest key (${error.status})`, errorCode: 'PROVIDER_FATAL' });
      }
    },
    onStatus(status) {
      options.onStatus?.(status);
      if (phase === 'failed' && status === 'current' && client.config()) {
        phase = 'running';
        events.emit(event('PROVIDER_READY'), { message: 'the first config was read' });
      } else if (phase === 'running' && status === 'stale' && !stale) {
        stale = true;
        events.emit(event('PROVIDER_STALE'), { message: 'the config could not be read or checked: decisions use the last one' });
      } else if (phase === 'running' && status === 'current' && stale) {
        stale = false;
        events.emit(event('PROVIDER_READY'), { message: 'the config is current again' });
      }
    },
  });
  let first = true;
  client.subscribe(() => {
    if (phase === 'running' && !first) events.emit(event('PROVIDER_CONFIGURATION_CHANGED'), { message: 'the team config changed' });
    first = false;
  });
  return {
    client,
    async initialize() {
      // A refused key rejects ready() too; startFailed says why, with OpenFeature's code.
      await Promise.race([client.ready().catch(() => startFailed), startFailed]);
      phase = 'running';
    },
  };
}
