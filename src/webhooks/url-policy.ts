import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { badInput } from '../errors.js';

/**
 * Addresses a webhook may never reach in production (OWASP API7, SSRF): "this" network,
 * private, loopback, link-local (cloud metadata 169.254.169.254), CGNAT, benchmarking,
 * documentation, multicast and reserved ranges, and their IPv6 equivalents.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) IPv6 address. */
function embeddedIpv4(ip: string): string | undefined {
  const groups = expandIpv6(ip);
  if (!groups) return undefined;
  const zeros = groups.slice(0, 5).every((g) => g === 0);
  if (!zeros || (groups[5] !== 0xffff && groups[5] !== 0)) return undefined;
  if (groups[5] === 0 && groups[6] === 0) return undefined; // ::, ::1 and friends are IPv6 rules' business
  return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
}

/** The 8 groups of an IPv6 address (dotted IPv4 tail allowed), or undefined. */
function expandIpv6(ip: string): number[] | undefined {
  let text = ip;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const p = tail[1]!.split('.').map(Number);
    text = `${text.slice(0, -tail[1]!.length)}${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const a = head ? head.split(':') : [];
  const b = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const missing = 8 - a.length - b.length;
  if (rest === undefined ? a.length !== 8 : missing < 0) return undefined;
  const groups = [...a, ...Array<string>(rest === undefined ? 0 : missing).fill('0'), ...b].map((g) => parseInt(g, 16));
  return groups.some((g) => Number.isNaN(g) || g < 0 || g > 0xffff) ? undefined : groups;
}

/** Whether a webhook may connect to this IP address in production. */
export function isPublicAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return !BLOCKED.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4 !== undefined) return !BLOCKED.check(v4, 'ipv4');
    return !BLOCKED.check(bare, 'ipv6');
  }
  return false;
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
