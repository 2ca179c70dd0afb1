/**
 * The front door's public requests (contract §11): forwarded to the pass-through's service on an
 * undici pool of their own, with no credential of the gateway's whatever `passthrough.auth` says
 * (the pool's endpoint is opened with `{type: client}` auth, which adds only the client's own
 * `Authorization`, `RequestDate` and `Signature`), the client's other headers as sent (cookies
 * included), and the service's answer relayed as it came (`Location`, every `Set-Cookie`, the body).
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { UpstreamConfig } from '../../config/upstream.js';
import type { RequestContext } from '../../http/context.js';
import { backendCall } from '../../http/forwarded.js';
import { relay } from '../../http/respond.js';
import { UpstreamAnswer, upstreamRequestId } from '../../upstream/answer.js';
import { createUpstreamClient } from '../../upstream/client.js';
import type { UpstreamDeps } from '../../upstream/endpoint.js';
import type { ClientCredentials } from '../../upstream/forwarded.js';
import type { Operation } from '../operation.js';
import { answerDropped, publicHeaders } from './headers.js';

/** What the front door is told of a public request's answer. */
export interface PublicHooks {
  /** The service's status, before the answer is written (a 401 on `login` counts against the address). */
  answered?(ctx: RequestContext, status: number): void;
}

/**
 * The public operation forwarding to the service of `config`. Its pool, targets and metrics are its
 * own, labelled `public` (the pass-through's relay keeps `passthrough`).
 */
export function createPublicOperation(
  config: UpstreamConfig,
  deps: UpstreamDeps,
  hooks: PublicHooks = {},
): Operation {
  const client = createUpstreamClient({ ...config, auth: { type: 'client' } }, 'public', deps);
  const { answered } = hooks;
  return {
    id: 'public',
    permission: 'passthrough',
    public: true,
    async handle(ctx) {
      const call = backendCall(ctx);
      const { req } = ctx;
      const arrived = await client.send({
        request: { ...call.request, credentials: credentialsOf(req) },
        headers: publicHeaders(req, ctx.peerTrusted),
        signal: call.stop,
        meter: call,
        replayable: false,
        parent: ctx.span,
      });
      answered?.(ctx, arrived.statusCode);
      return relay(ctx, new UpstreamAnswer(arrived.statusCode, answerOf(arrived.headers), arrived.body));
    },
    ready: () => client.ready(),
    close: () => client.close(),
  };
}

/** The client's own credential headers, as it sent them (none: none goes out). */
function credentialsOf(req: IncomingMessage): ClientCredentials {
  const { authorization, requestdate, signature } = req.headers;
  const credentials: { authorization?: string; requestdate?: string; signature?: string } = {};
  if (authorization !== undefined) credentials.authorization = authorization;
  if (typeof requestdate === 'string') credentials.requestdate = requestdate;
  if (typeof signature === 'string') credentials.signature = signature;
  return credentials;
}

/**
 * The service's answer headers as they go to the client (every `Set-Cookie` kept apart), without
 * hop-by-hop ones and its own `RequestID` (ours stays; its own comes back as `X-Upstream-RequestID`)
 * and `Preference-Applied` (ours stays).
 */
function answerOf(headers: IncomingHttpHeaders): Readonly<Record<string, string>> {
  const dropped = answerDropped(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || dropped.has(name)) continue;
    out[name] = value;
  }
  const id = upstreamRequestId(headers);
  if (id !== undefined) out['X-Upstream-RequestID'] = id;
  // `relay` writes a list value as one header per entry (`appendHeaders`).
  return out as Readonly<Record<string, string>>;
}
