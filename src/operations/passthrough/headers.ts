/**
 * Which headers cross the pass-through, each way: hop-by-hop headers stay behind, the ones the
 * gateway sets itself replace the client's, forwarding headers come only from a trusted proxy, and
 * the service's answer keeps the gateway's own `RequestID`, `Preference-Applied` and `RateLimit*`.
 */
import type { IncomingMessage } from 'node:http';

/** Headers that describe one connection only (RFC 9110 §7.6.1), never forwarded. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
];
/** Headers the gateway sets itself: a client's own values never go out. */
const GATEWAY_SET = [
  'authorization',
  'requestdate',
  'signature',
  'x-gateway-subject',
  'prefer',
  'content-length',
  'x-request-id',
  'traceparent',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
];
/** Forwarding headers a client may not set unless it is a trusted proxy. */
const UNTRUSTED = ['forwarded', 'x-real-ip', 'x-client-ip', 'true-client-ip'];
/** Headers some frameworks route by: never forwarded. */
const REROUTING = [
  'x-original-url',
  'x-rewrite-url',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
];

/**
 * The incoming headers that must not go out: hop-by-hop ones, those named in `Connection`,
 * rerouting ones, the ones the gateway sets itself when it sets no value of its own (`ours` replace
 * the client's), and, unless the peer is a trusted proxy, every other forwarding header.
 */
export function droppedHeaders(
  req: IncomingMessage,
  peerTrusted: boolean,
  ours: Record<string, string>,
): string[] {
  const dropped = [...HOP_BY_HOP, ...REROUTING, ...listedIn(req.headers.connection)];
  for (const name of GATEWAY_SET) if (!(name in ours)) dropped.push(name);
  if (!peerTrusted) {
    for (const name of Object.keys(req.headers)) {
      if (name in ours) continue;
      if (name.startsWith('x-forwarded-') || UNTRUSTED.includes(name)) dropped.push(name);
    }
  }
  return dropped;
}

/**
 * The headers of the upstream's answer that go to the client: all but the hop-by-hop ones, those
 * named in its `Connection`, and its `RequestID` (ours stays; its own comes back as
 * `X-Upstream-RequestID`) and `Preference-Applied` (ours stays); with `limited` (the gateway's rate
 * limits applied), its own `RateLimit*` headers too (ours replace them).
 */
export function answerHeaders(proxyRes: IncomingMessage, id: string | undefined, limited: boolean): string[] {
  const dropped = new Set([
    ...HOP_BY_HOP,
    ...listedIn(proxyRes.headers.connection),
    'requestid',
    'preference-applied',
  ]);
  const out: string[] = [];
  const raw = proxyRes.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    if (dropped.has(lower) || (limited && lower.startsWith('ratelimit'))) continue;
    out.push(name, raw[i + 1] as string);
  }
  if (id !== undefined) out.push('X-Upstream-RequestID', id);
  return out;
}

/**
 * The client's own headers that go to the service with a public request of the front door
 * (contract §11), to be sent beside those the gateway sets (forwarding, request id, `Prefer`,
 * `traceparent`, the client's own credentials): every header but the hop-by-hop ones, those named
 * in `Connection`, rerouting ones, the ones the gateway sets itself, `Host` (the service's own), and,
 * unless the peer is a trusted proxy, every other forwarding header.
 */
export function publicHeaders(req: IncomingMessage, peerTrusted: boolean): Record<string, string> {
  const listed = listedIn(req.headers.connection);
  const out: Record<string, string> = {};
  const { headers } = req;
  for (const name in headers) {
    if (NOT_PUBLIC.has(name) || (listed.length > 0 && listed.includes(name))) continue;
    if (!peerTrusted && (name.startsWith('x-forwarded-') || UNTRUSTED.includes(name))) continue;
    const value = headers[name];
    if (typeof value === 'string') out[name] = value;
    else if (value !== undefined) out[name] = value.join(', ');
  }
  return out;
}

/** What `publicHeaders` never passes on. */
const NOT_PUBLIC = new Set([...HOP_BY_HOP, ...REROUTING, ...GATEWAY_SET, 'host']);

/** An answer's headers that never reach the client, as `answerHeaders` drops them. */
const ANSWER_DROPPED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'requestid', 'preference-applied']);

/** The names of an answer's headers that never reach the client (given its `Connection` header). */
export function answerDropped(connection: string | string[] | undefined): ReadonlySet<string> {
  const listed = listedIn(connection);
  return listed.length === 0 ? ANSWER_DROPPED : new Set([...ANSWER_DROPPED, ...listed]);
}

const NONE: string[] = [];

/**
 * The header names a `Connection` value lists, lower-cased. The two values nearly every request and
 * answer carry list no header beyond the hop-by-hop ones, and are answered without a split.
 */
function listedIn(connection: string | string[] | undefined): string[] {
  if (typeof connection !== 'string' || connection === 'keep-alive' || connection === 'close') return NONE;
  return connection.split(',').map((h) => h.trim().toLowerCase());
}
