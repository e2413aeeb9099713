import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * The addresses a webhook is never sent to (unless the operator allows them): each named for the
 * refusal. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are checked as their IPv4 address.
 */
const NON_PUBLIC: Array<[kind: string, ranges: Array<[address: string, prefix: number, family: 'ipv4' | 'ipv6']>]> = [
  ['loopback', [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']]],
  ['private', [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['fc00::', 7, 'ipv6']]],
  ['link-local (cloud metadata services among them)', [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']]],
  ['carrier-grade NAT', [['100.64.0.0', 10, 'ipv4']]],
  ['unspecified', [['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6']]],
  ['multicast', [['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']]],
  ['reserved', [['240.0.0.0', 4, 'ipv4'], ['192.0.0.0', 24, 'ipv4'], ['198.18.0.0', 15, 'ipv4'], ['64:ff9b::', 96, 'ipv6'], ['100::', 64, 'ipv6']]],
];

const LISTS = NON_PUBLIC.map(([kind, ranges]) => {
  const list = new BlockList();
  for (const [address, prefix, family] of ranges) list.addSubnet(address, prefix, family);
  return { kind, list };
});

/** What kind of non-public address `address` is (`loopback`, `private`, …), or undefined for a public one. */
export function nonPublicKind(address: string): string | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const [ip, family] = mapped ? [mapped, 'ipv4' as const] : [address, isIP(address) === 6 ? ('ipv6' as const) : ('ipv4' as const)];
  return LISTS.find(({ list }) => list.check(ip, family))?.kind;
}

/** A URL the service will not send to, and why (for the problem's field error and a delivery's last_error). */
export class RefusedUrl extends Error {}

/** A host that does not resolve (now): accepted for an endpoint, a failed attempt for a delivery. */
export class Unresolved extends Error {}

/** The addresses `hostname` resolves to (itself when it is an address), all checked: RefusedUrl when one is not public and private ones are not allowed. */
export async function publicAddresses(hostname: string, allowPrivate: boolean): Promise<Array<{ address: string; family: number }>> {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (error) {
      throw new Unresolved(`the host ${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (!allowPrivate) {
    for (const { address } of addresses) {
      const kind = nonPublicKind(address);
      if (kind) throw new RefusedUrl(`resolves to ${address}, a ${kind} address`);
    }
  }
  return addresses;
}

/** Refuses a URL to create an endpoint with: not absolute http(s), with credentials, or (unless allowed) resolving to a non-public address; a host that does not resolve yet passes. */
export async function checkUrl(raw: string, allowPrivate: boolean): Promise<void> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RefusedUrl('is not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new RefusedUrl('must be an http or https URL');
  if (url.username || url.password) throw new RefusedUrl('must not hold a user name or password');
  // A resolver that does not answer soon counts as a name that does not resolve yet: the request is not held.
  const slow = new Promise<void>((resolve) => setTimeout(resolve, CREATE_LOOKUP_MS).unref());
  try {
    await Promise.race([publicAddresses(url.hostname, allowPrivate), slow]);
  } catch (error) {
    if (!(error instanceof Unresolved)) throw error;
  }
}

const CREATE_LOOKUP_MS = 2000;
