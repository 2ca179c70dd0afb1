/**
 * Who the client is, behind the proxies the operator trusts (`server.trusted_proxies`): the rightmost
 * `X-Forwarded-For` hop that is not a trusted proxy, as proxy-addr computes it. A client cannot forge
 * its address by sending its own `X-Forwarded-For`: only hops appended by trusted proxies are read.
 */
import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

/** How the client address of a request is found, for one configuration. */
export interface ClientAddressing {
  /** The client's address (the peer's when no trusted proxy stands in front). */
  address(req: IncomingMessage): string;
  /** Whether the peer that connected is a trusted proxy (its `X-Forwarded-Proto`/`-Host` are read). */
  peerTrusted(req: IncomingMessage): boolean;
}

/** The trust of `server.trusted_proxies` (addresses, CIDRs, proxy-addr's names), or every hop. */
export function createClientAddressing(server: {
  readonly trusted_proxies: readonly string[];
  readonly trust_proxy: boolean;
}): ClientAddressing {
  if (server.trust_proxy) {
    return {
      address: (req) => proxyaddr(req, () => true),
      peerTrusted: () => true,
    };
  }
  if (server.trusted_proxies.length === 0) {
    // Nothing trusted: the peer is the client, whatever it sends.
    return { address: (req) => req.socket.remoteAddress ?? '', peerTrusted: () => false };
  }
  const trust = proxyaddr.compile([...server.trusted_proxies]);
  return {
    address: (req) => proxyaddr(req, trust),
    peerTrusted: (req) => trust(req.socket.remoteAddress ?? '', 0),
  };
}
