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

/** The headers every upstream request carries for `ctx` (forwarding and deadline). */
export function forwardingHeaders(
  ctx: RequestContext,
  trustProxy: boolean,
  prefer = true,
): Record<string, string> {
  const { req } = ctx;
  const peer = req.socket.remoteAddress ?? '';
  const given = (name: string) => {
    const value = req.headers[name];
    return trustProxy && typeof value === 'string' && value !== '' ? value : undefined;
  };
  const incomingFor = given('x-forwarded-for');
  const headers: Record<string, string> = {
    'x-forwarded-for': incomingFor === undefined ? peer : `${incomingFor}, ${peer}`,
    'x-forwarded-proto':
      given('x-forwarded-proto') ?? ((req.socket as TLSSocket).encrypted === true ? 'https' : 'http'),
    'x-request-id': ctx.id,
  };
  const host = given('x-forwarded-host') ?? req.headers.host;
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
