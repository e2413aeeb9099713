import type { components } from '../../generated/api';

export type WebhookEventType = components['schemas']['WebhookEventType'];

/** A change's event type: its audit entry's `<resource_type>.<action>`. */
export function eventTypeOf(entry: { resource_type: string; action: string }): string {
  return `${entry.resource_type}.${entry.action}`;
}

/** Whether an endpoint asking for `wanted` takes a change of type `type` — named exactly, or by its resource's `<resource>.*`. */
export function wants(wanted: readonly string[], type: string): boolean {
  return wanted.includes(type) || wanted.includes(`${type.slice(0, type.indexOf('.'))}.*`);
}
