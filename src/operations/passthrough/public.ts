/**
 * What a public request of the front door (contract §11) carries to the service: the forwarding
 * headers every pass-through request gets, and the client's own credentials as it sent them, never
 * one of the gateway's. With no identity there is no `X-Gateway-Subject`; the relay removes a
 * client's own, as it removes every header the gateway sets itself.
 */
import type { IncomingMessage } from 'node:http';
import { forwardingHeaders } from '../../upstream/endpoint.js';
import type { ForwardedRequest } from '../../upstream/forwarded.js';

/** The credential headers a client may send to the service itself (a login, a session token). */
const CLIENT_OWN = ['authorization', 'requestdate', 'signature'] as const;

/** The headers the gateway sets on a public request: forwarding, request id, `Prefer`, `traceparent`. */
export function publicHeaders(request: ForwardedRequest, req: IncomingMessage): Record<string, string> {
  const headers = forwardingHeaders(request);
  for (const name of CLIENT_OWN) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}
