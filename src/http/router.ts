/**
 * Exact routing on the raw request target. A target that could be read as another path (dot
 * segments, `//`, backslashes, encoded slashes) is refused before routing, so nothing can reach an
 * operation other than the one that was signed.
 */
import type { IncomingMessage } from 'node:http';
import { errors } from '../errors.js';

/** The operation ids, used as the `operation` label of metrics and in log lines. */
export type OperationId =
  | 'GetCollectorChecksum'
  | 'UpdateSSOProvider'
  | 'GetAssetGroupTagMember'
  /** Any other `/api/v2` request, forwarded to the service when pass-through is configured. */
  | 'passthrough';

/** A matched route: the operation and its path parameters, percent-decoded. */
export interface Route {
  readonly operation: OperationId;
  readonly params: Readonly<Record<string, string>>;
}

interface RouteSpec {
  readonly operation: OperationId;
  readonly methods: readonly string[];
  /** Path segments; `{name}` is a parameter. */
  readonly segments: readonly string[];
}

const PASSTHROUGH: Route = Object.freeze({ operation: 'passthrough', params: Object.freeze({}) });

const SPECS: readonly RouteSpec[] = [
  {
    operation: 'GetCollectorChecksum',
    methods: ['GET', 'HEAD'],
    segments: ['api', 'v2', 'collectors', '{collector_type}', '{release_tag}', 'checksum'],
  },
  {
    operation: 'UpdateSSOProvider',
    methods: ['PATCH'],
    segments: ['api', 'v2', 'sso-providers', '{sso_provider_id}'],
  },
  {
    operation: 'GetAssetGroupTagMember',
    methods: ['GET', 'HEAD'],
    segments: ['api', 'v2', 'asset-group-tags', '{asset_group_tag_id}', 'members', '{asset_group_member_id}'],
  },
];

const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;
const FORBIDDEN = /\/\/|\\|%2f|%5c/i;

/**
 * The path's segments; 400 for a target that is not a safe origin-form path (`path` is the raw
 * target without its query).
 */
function checkTarget(path: string): string[] {
  if (!path.startsWith('/')) throw errors.badTarget('must be a path starting with "/"');
  if (FORBIDDEN.test(path)) throw errors.badTarget('must not contain "//", "\\" or an encoded slash');
  const segments = path.slice(1).split('/');
  for (const segment of segments) {
    if (DOT_SEGMENT.test(segment)) throw errors.badTarget('must not contain a dot segment');
  }
  return segments;
}

/**
 * The route for `method` and the path `segments` (checked by `checkTarget`). Throws 404 for an
 * unknown path and 405 (with `Allow`) for a known path with another method; with `passthrough`,
 * both are the pass-through route instead when the path is under `/api/v2`.
 */
function route(method: string, segments: readonly string[], passthrough: boolean): Route {
  // TRACE would echo the gateway's own credentials back from the service; CONNECT is no request.
  const forwarded =
    passthrough &&
    segments[0] === 'api' &&
    segments[1] === 'v2' &&
    method !== 'TRACE' &&
    method !== 'CONNECT';
  for (const spec of SPECS) {
    const params = match(spec.segments, segments);
    if (!params) continue;
    if (!spec.methods.includes(method)) {
      if (forwarded) return PASSTHROUGH;
      throw errors.methodNotAllowed(spec.methods.join(', '));
    }
    return { operation: spec.operation, params };
  }
  if (forwarded) return PASSTHROUGH;
  throw errors.notFound();
}

function match(pattern: readonly string[], segments: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i] as string;
    const s = segments[i] as string;
    if (p.startsWith('{')) {
      if (s === '') return undefined;
      params[p.slice(1, -1)] = decode(s);
    } else if (p !== s) {
      return undefined;
    }
  }
  return params;
}

function decode(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    throw errors.badTarget('malformed percent-encoding');
  }
}

/**
 * The route of a request, from its raw path (the target without its query): 400 for a missing
 * HTTP/1.1 `Host` or an unsafe target, 404 / 405 (or pass-through) by `route`, then 417 for an `Expect` other than 100-continue (which Node leaves to us).
 */
export function routeRequest(req: IncomingMessage, path: string, passthrough = false): Route {
  if (req.headers.host === undefined && req.httpVersion === '1.1') throw errors.missingHost();
  const matched = route(req.method ?? '', checkTarget(path), passthrough);
  const expect = req.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') throw errors.expectationFailed();
  return matched;
}
