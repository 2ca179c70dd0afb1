/**
 * What a request to an upstream carries besides its method, target and body: the gateway's own
 * credentials (or the client's, forwarded), who the client is, and how long the upstream may take.
 * Built from the request being served, never from client-sent `X-Gateway-*` headers.
 */
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { type RequestKeys, rfc3339 } from '../auth/signature.js';
import type { UpstreamAuthConfig } from '../config/schema.js';
import type { RequestContext } from '../http/context.js';
import { secondsLeft } from '../http/deadline.js';

/** A trusted proxy's `X-Forwarded-Proto`: its first entry, when it names a scheme. */
const PROTO = /^\s*(https?)\s*(?:,|$)/i;
/** A trusted proxy's `X-Forwarded-Host`: its first entry, when it is a plain host[:port]. */
const HOST = /^\s*([A-Za-z0-9.\-_:[\]]{1,255})\s*(?:,|$)/;

/**
 * The headers every upstream request carries for `ctx` (forwarding and deadline). `X-Forwarded-For`
 * is the client address as computed under `server.trusted_proxies`, alone: the hops a trusted proxy
 * did not vouch for are not passed on, and the service's own per-address limits see the client.
 * `-Proto` and `-Host` come from the peer when it is a trusted proxy, else from what the gateway saw.
 */
export function forwardingHeaders(ctx: RequestContext, prefer = true): Record<string, string> {
  const { req } = ctx;
  const given = (name: string, form: RegExp) => {
    const value = req.headers[name];
    return ctx.peerTrusted && typeof value === 'string' ? form.exec(value)?.[1] : undefined;
  };
  const headers: Record<string, string> = {
    'x-forwarded-for': ctx.client,
    'x-forwarded-proto':
      given('x-forwarded-proto', PROTO)?.toLowerCase() ??
      ((req.socket as TLSSocket).encrypted === true ? 'https' : 'http'),
    'x-request-id': ctx.id,
  };
  const host = given('x-forwarded-host', HOST) ?? req.headers.host;
  if (host !== undefined) headers['x-forwarded-host'] = host;
  if (ctx.identity !== undefined) headers['x-gateway-subject'] = ctx.identity.subject;
  const seconds = prefer ? secondsLeft(ctx) : undefined;
  if (seconds !== undefined) headers.prefer = `wait=${seconds}`;
  return headers;
}

/** A request body as it will be sent: bytes in memory, or a way to stream it (each call a new stream). */
export type OutgoingBody = Buffer | { readonly size: number; stream(): Readable };

/**
 * The authentication headers for one upstream request under `auth`: re-signed over exactly the
 * method, target and body that go out (`signature`), a static token (`bearer`), or the client's own
 * headers (`client`; absent ones stay absent).
 */
export async function authHeaders(
  auth: UpstreamAuthConfig,
  request: {
    method: string;
    target: string;
    body: OutgoingBody | undefined;
    client: RequestContext | undefined;
  },
  keys: RequestKeys,
  now: () => number = Date.now,
): Promise<Record<string, string>> {
  if (auth.type === 'bearer') return { authorization: `Bearer ${auth.token}` };
  if (auth.type === 'client') {
    const headers: Record<string, string> = {};
    const from = request.client?.req.headers;
    for (const name of ['authorization', 'requestdate', 'signature'] as const) {
      const value = from?.[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return headers;
  }
  const date = rfc3339(now());
  // Repeated requests (the same method and target within the hour) reuse their signing key.
  const digest = keys.open(auth.token_id, auth.token_key, request.method, request.target, date);
  const { body } = request;
  if (Buffer.isBuffer(body)) {
    digest.update(body);
  } else if (body !== undefined) {
    for await (const chunk of body.stream()) digest.update(chunk as Buffer);
  }
  return {
    authorization: `${auth.scheme} ${auth.token_id}`,
    requestdate: date,
    signature: digest.digest().toString('base64'),
  };
}
