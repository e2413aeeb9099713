// OpenFeature's flag evaluation suite (open-feature/spec, specification/assets/gherkin/
// evaluation.feature), with steps and flags of our own: the steps run through
// @openfeature/server-sdk with whichever provider a run names, so that the same scenarios run
// with the package's provider and with a community OFREP provider against the same server.
import { OpenFeature, type EvaluationContext, type EvaluationDetails, type FlagValue, type JsonValue, type Provider } from '@openfeature/server-sdk';
import { expect } from 'vitest';
import type { components } from '../../generated/api';
import type { TestTeam } from './team';

type FeatureCreate = components['schemas']['FeatureCreate'];

/**
 * The suite's flags as this service defines them. Where the suite's flags pick a variant with a
 * CEL expression over the context, a force rule's conditions pick the value here:
 * `context_aware` serves INTERNAL when fn, ln, age > 10 and customer false all match.
 */
export const EVALUATION_FLAGS: FeatureCreate[] = [
  { key: 'boolean_flag', type: 'boolean', enabled: true, value: 'true' },
  { key: 'string_flag', type: 'string', enabled: true, value: 'hi' },
  { key: 'integer_flag', type: 'number', enabled: true, value: '10' },
  { key: 'float_flag', type: 'number', enabled: true, value: '0.5' },
  { key: 'object_flag', type: 'json', enabled: true, value: JSON.stringify({ showImages: true, title: 'Check out these pics!', imagesPerPage: 100 }) },
  {
    key: 'context_aware',
    type: 'string',
    enabled: true,
    value: 'EXTERNAL',
    rules: [{ type: 'force', conditions: { fn: 'Sulisław', ln: 'Świętopełk', age: { $gt: 10 }, customer: false }, value: 'INTERNAL' }],
  },
  { key: 'wrong_flag', type: 'string', enabled: true, value: 'uno' },
];

/** A key has no `-` here (the contract's Key): each suite key's `-` is a `_`. */
export const ourKey = (suiteKey: string) => suiteKey.replaceAll('-', '_');

/**
 * The suite names each value a flag can take (its variants: `on`, `greeting`, …); this service
 * names what served the value, and a flag's own value is `default`. The variant each step
 * expects, told in our names.
 */
export const VARIANT_NAMES: Record<string, Record<string, string>> = {
  boolean_flag: { on: 'default' },
  string_flag: { greeting: 'default' },
  integer_flag: { ten: 'default' },
  float_flag: { half: 'default' },
  object_flag: { template: 'default' },
};

export async function createEvaluationFlags(team: TestTeam): Promise<void> {
  for (const body of EVALUATION_FLAGS) {
    const { response, error } = await team.api.POST('/api/teams/{team}/features', { params: { path: { team: team.id } }, body });
    if (response.status !== 200) throw new Error(`creating ${body.key} failed: ${response.status} ${JSON.stringify(error)}`);
  }
}

type Kind = 'boolean' | 'string' | 'integer' | 'float' | 'object';

let domains = 0;

/** One scenario's state: the provider under test, the context, the last evaluation. */
export class EvaluationSteps {
  private domain = `evaluation-${++domains}`;
  private context: EvaluationContext = {};
  private flagKey = '';
  private kind: Kind = 'string';
  private defaultValue: FlagValue = '';
  private last?: EvaluationDetails<FlagValue>;
  private current?: Provider;

  constructor(private readonly provider: () => Provider) {}

  /** Given a stable provider */
  async aStableProvider(): Promise<void> {
    this.current = this.provider();
    await OpenFeature.setProviderAndWait(this.domain, this.current);
  }

  /** Ends the provider (its config stream, its queue): each scenario has its own. */
  async close(): Promise<void> {
    await this.current?.onClose?.();
  }

  /** When a(n) {kind} flag with key {key} is evaluated [with details] with default value {value} */
  async evaluate(kind: Kind, suiteKey: string, defaultValue: FlagValue): Promise<void> {
    const flagKey = ourKey(suiteKey);
    this.flagKey = flagKey;
    this.kind = kind;
    this.defaultValue = defaultValue;
    this.last = await this.details(kind, flagKey, defaultValue, this.context);
  }

  /** Then the resolved {kind} value should be {value} */
  theValueIs(expected: FlagValue): void {
    expect(this.last?.errorCode).toBeUndefined();
    expect(this.last?.value).toEqual(expected);
  }

  /** Then the resolved object value should contain fields … with values … */
  theObjectHas(fields: Record<string, JsonValue>): void {
    expect(this.last?.errorCode).toBeUndefined();
    expect(this.last?.value).toMatchObject(fields);
  }

  /** Then … the variant should be {variant}, and the reason should be {reason} */
  theVariantAndReasonAre(variant: string, reason: string): void {
    expect(this.last?.variant).toBe(VARIANT_NAMES[this.flagKey]?.[variant] ?? variant);
    expect(this.last?.reason).toBe(reason);
  }

  /** When context contains keys … with values … */
  contextContains(context: EvaluationContext): void {
    this.context = { ...this.context, ...context };
  }

  /** And the resolved flag value is {value} when the context is empty */
  async withAnEmptyContextTheValueIs(expected: FlagValue): Promise<void> {
    const details = await this.details(this.kind, this.flagKey, this.defaultValue, {});
    expect(details.errorCode).toBeUndefined();
    expect(details.value).toEqual(expected);
  }

  /** Then the default {kind} value should be returned */
  theDefaultIsReturned(): void {
    expect(this.last?.value).toEqual(this.defaultValue);
  }

  /** And the reason should indicate an error and the error code should indicate … with {code} */
  theErrorIs(errorCode: string): void {
    expect(this.last?.reason).toBe('ERROR');
    expect(this.last?.errorCode).toBe(errorCode);
  }

  private details(kind: Kind, flagKey: string, defaultValue: FlagValue, context: EvaluationContext): Promise<EvaluationDetails<FlagValue>> {
    const client = OpenFeature.getClient(this.domain);
    switch (kind) {
      case 'boolean':
        return client.getBooleanDetails(flagKey, defaultValue as boolean, context);
      case 'string':
        return client.getStringDetails(flagKey, defaultValue as string, context);
      case 'integer':
      case 'float':
        return client.getNumberDetails(flagKey, defaultValue as number, context);
      case 'object':
        return client.getObjectDetails(flagKey, defaultValue as JsonValue, context);
    }
  }
}
