/**
 * The subject an address is counted under by `rate_limits.unauthenticated`: an IPv4 address as it
 * is, an IPv6 address by its /64 (one host usually holds a whole /64, and would otherwise have 2^64
 * addresses to rotate through), an IPv4-mapped IPv6 address as its IPv4 address.
 */
import ipaddr from 'ipaddr.js';

/** `ip:<IPv4>` or `ip:<first four IPv6 groups>::/64`; an unparsable address as it is. */
export function addressSubject(address: string): string {
  // The common case, a plain IPv4 peer, without parsing.
  if (!address.includes(':')) return `ip:${address}`;
  if (!ipaddr.isValid(address)) return `ip:${address}`;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return `ip:${parsed.toString()}`;
  const groups = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `ip:${groups.join(':')}::/64`;
}
