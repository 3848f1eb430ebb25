import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { lookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { badInput } from '../errors.js';

/**
 * Whether a webhook may connect to this IP address in production (OWASP API7, SSRF): only a
 * global unicast address. ipaddr.js classifies it; every special range it knows is refused:
 * "this" network, private, loopback, link-local (cloud metadata 169.254.169.254), CGNAT,
 * benchmarking, documentation, multicast, broadcast and reserved ranges, and their IPv6
 * equivalents (unique-local, site-local, discard, NAT64, 6to4, Teredo, ...). An IPv6 address
 * that carries an IPv4 one (mapped `::ffff:a.b.c.d`, or compatible `::a.b.c.d`, which includes
 * `::` and `::1`) is judged by that IPv4 address.
 */
export function isPublicAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!isIP(bare)) return false;
  let address = ipaddr.parse(bare);
  if (address.kind() === 'ipv6') {
    const v6 = address as ipaddr.IPv6;
    const carriesIpv4 = v6.isIPv4MappedAddress() || v6.parts.slice(0, 6).every((group) => group === 0);
    if (carriesIpv4) address = ipaddr.fromByteArray(v6.toByteArray().slice(12));
  }
  return address.range() === 'unicast';
}

/** Resolves a host name to every address it has (A and AAAA). */
export type Resolver = (host: string) => Promise<LookupAddress[]>;
export const resolveAll: Resolver = (host) => lookup(host, { all: true, verbatim: true });

/** The rules a webhook URL follows in this environment. */
export interface UrlPolicy {
  /** Production: https only, and only public addresses (checked again at every delivery). */
  production: boolean;
  resolve?: Resolver;
}

/**
 * Checks a webhook endpoint URL at registration: an absolute http(s) URL without credentials, at
 * most 2048 characters; in production `https` only, and its host (an address, or every address
 * its name resolves to) public. Throws BAD_USER_INPUT saying what is wrong.
 */
export async function checkEndpointUrl(raw: unknown, policy: UrlPolicy): Promise<URL> {
  if (typeof raw !== 'string' || raw.length === 0) throw badInput('url must be a non-empty string');
  if (raw.length > 2048) throw badInput('url must be at most 2048 characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badInput('url must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badInput('url must use https');
  if (policy.production && url.protocol !== 'https:') throw badInput('url must use https');
  if (url.username || url.password) throw badInput('url must not contain credentials');
  if (!url.hostname) throw badInput('url must have a host');
  if (policy.production) await assertPublicHost(url.hostname, policy.resolve ?? resolveAll);
  return url;
}

/**
 * Refuses a host that is, or resolves to, a non-public address (used at registration and before
 * every delivery; the delivery also pins the connection to the checked address).
 */
export async function assertPublicHost(hostname: string, resolve: Resolver = resolveAll): Promise<LookupAddress[]> {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw badInput('url must not point to a private, loopback, link-local or reserved address');
    return [{ address: host, family: isIP(host) }];
  }
  if (host === 'localhost' || host.endsWith('.localhost')) throw badInput('url must not point to this machine');
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    throw badInput('url host could not be resolved');
  }
  if (addresses.length === 0) throw badInput('url host could not be resolved');
  if (addresses.some((a) => !isPublicAddress(a.address))) {
    throw badInput('url must not point to a private, loopback, link-local or reserved address');
  }
  return addresses;
}
