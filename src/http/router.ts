/**
 * Routing as the service's router does it (gorilla/mux, without encoded-path matching): the path is
 * percent-decoded once, segment by segment, and matched on what it decodes to, so every spelling the
 * service would run as one of the three operations (`sso%2Dproviders`, `%31` as an id) is that
 * operation here too, with its permission and its validation. A path holding `//` or a dot segment is
 * answered `301` to its cleaned form (as the service's `path.Clean` does); a target that could be read
 * as another path in some other way is refused (400) before any of this.
 */
import type { IncomingMessage } from 'node:http';
import { unescape } from 'node:querystring';
import { OPERATION_PATHS, type OperationPath } from '../config/operation-paths.js';
import { errors } from '../errors.js';
import type { Route } from './route.js';
import type { RouteTable } from './route-table.js';

/** An operation's path as matched: each segment's parameter name (undefined for a fixed word), read once. */
interface CompiledSpec extends OperationPath {
  readonly names: ReadonlyArray<string | undefined>;
}

const SPECS: readonly CompiledSpec[] = OPERATION_PATHS.map((spec) => ({
  ...spec,
  names: spec.segments.map((p) => (p.startsWith('{') ? p.slice(1, -1) : undefined)),
}));

/** `GET /api/v2/audit`: the gateway's only with `audit.serve_api` (contract §12), else the service's. */
const AUDIT = {
  methods: ['GET', 'HEAD'],
  segments: ['api', 'v2', 'audit'],
  names: [undefined, undefined, undefined],
};

/** A `%` that does not start a two-digit hex escape. */
const BAD_ESCAPE = /%(?![0-9a-fA-F]{2})/;
/** What a path segment may not decode to hold: a slash, a backslash or a NUL. */
const DECODED_FORBIDDEN = /[/\\\0]/;

/**
 * The path's segments (raw and decoded once), or a 400 for a target that is not an origin-form path
 * (absolute form, `*`), holds `#` anywhere, or holds in its path a `\`, a malformed escape, or an
 * escape decoding to `/`, `\` or NUL. `target` is the raw request target, `path` its part before `?`.
 */
function checkTarget(target: string, path: string): { raw: string[]; decoded: string[] } {
  if (!path.startsWith('/')) throw errors.badTarget('must be a path starting with "/"');
  if (target.includes('#')) throw errors.badTarget('must not contain "#"');
  if (path.includes('\\')) throw errors.badTarget('must not contain "\\"');
  const raw = segmentsOf(path);
  // Without a `%` every segment is its own decoding.
  const decoded = path.includes('%') ? raw.map(decodeSegment) : raw;
  return { raw, decoded };
}

/**
 * The segments of `path` (which starts with `/`), as `path.slice(1).split('/')` gives them: found with
 * `indexOf`, since `split` is a call into the runtime, most of what routing would cost.
 */
function segmentsOf(path: string): string[] {
  const segments: string[] = [];
  let from = 1;
  for (let at = path.indexOf('/', from); at !== -1; at = path.indexOf('/', from)) {
    segments.push(path.slice(from, at));
    from = at + 1;
  }
  segments.push(path.slice(from));
  return segments;
}

/** One segment percent-decoded once; 400 for a malformed escape or an encoded `/`, `\` or NUL. */
function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  if (BAD_ESCAPE.test(segment)) throw errors.badTarget('malformed percent-encoding');
  // Bytes that are not UTF-8 become U+FFFD: they match no fixed word and no parameter.
  const value = unescape(segment);
  if (DECODED_FORBIDDEN.test(value)) {
    throw errors.badTarget('must not contain an encoded "/", "\\" or NUL');
  }
  return value;
}

/**
 * The cleaned path when `raw` (the segments as sent) holds an empty segment (`//`) or a dot segment
 * (`.`/`..`, raw or encoded): Go's `path.Clean` keeping a trailing `/`, every other byte as sent.
 * Undefined when there is nothing to clean; 400 for a path that would climb above the root.
 */
function cleaned(raw: readonly string[], decoded: readonly string[]): string | undefined {
  let changed = false;
  const kept: string[] = [];
  const last = raw.length - 1;
  for (let i = 0; i <= last; i++) {
    const segment = raw[i] as string;
    const value = decoded[i] as string;
    if (segment === '') {
      // An empty last segment is a trailing `/`, kept; any other empty segment is a `//`.
      if (i !== last) changed = true;
    } else if (value === '.') {
      changed = true;
    } else if (value === '..') {
      changed = true;
      if (kept.length === 0) throw errors.badTarget('must not climb above the root');
      kept.pop();
    } else {
      kept.push(segment);
    }
  }
  if (!changed) return undefined;
  const path = `/${kept.join('/')}`;
  return raw[last] === '' && kept.length > 0 ? `${path}/` : path;
}

/**
 * `target` with its path cleaned as a `301` from the gateway would clean it, the query as sent;
 * undefined when the path needs no cleaning or would be refused (`gateway verify` tries it).
 */
export function cleanedTarget(target: string): string | undefined {
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  try {
    const { raw, decoded } = checkTarget(target, path);
    const clean = cleaned(raw, decoded);
    return clean === undefined ? undefined : clean + target.slice(path.length);
  } catch {
    return undefined;
  }
}

/**
 * The route for `method` and the decoded path `segments`: one of the three operations (or the audit
 * API, with `audit`), else (with the front door's `table`, when pass-through is configured) the
 * table's route, else 404; a known operation path with another method is 405 (with `Allow`) without a
 * table, and the audit API's always.
 */
function route(
  method: string,
  segments: readonly string[],
  table: RouteTable | undefined,
  audit: boolean,
): Route {
  let allow: string | undefined;
  if (audit && match(AUDIT, segments)) {
    if (AUDIT.methods.includes(method))
      return { operation: 'ListAuditLogs', params: {}, name: 'ListAuditLogs' };
    throw errors.methodNotAllowed(AUDIT.methods.join(', '));
  }
  for (const spec of SPECS) {
    const params = match(spec, segments);
    if (!params) continue;
    if (spec.methods.includes(method)) return { operation: spec.operation, params, name: spec.operation };
    allow = spec.methods.join(', ');
    break;
  }
  const routed = table?.match(method, segments);
  if (routed !== undefined) return routed;
  if (allow !== undefined && table === undefined) throw errors.methodNotAllowed(allow);
  throw errors.notFound();
}

/** The parameters of `segments` when they match `spec`: checked first, the object made only for a match. */
function match(
  spec: Pick<CompiledSpec, 'segments' | 'names'>,
  segments: readonly string[],
): Record<string, string> | undefined {
  const { segments: pattern, names } = spec;
  if (pattern.length !== segments.length) return undefined;
  for (let i = 0; i < pattern.length; i++) {
    const s = segments[i] as string;
    if (names[i] !== undefined ? s === '' : pattern[i] !== s) return undefined;
  }
  const params: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    if (name !== undefined) params[name] = segments[i] as string;
  }
  return params;
}

/**
 * The route of a request, from its raw target and path (the target without its query): 400 for a
 * missing HTTP/1.1 `Host` or an unsafe target, 301 to the cleaned path (query as sent) for `//` or
 * a dot segment, 404 / 405 (or the front door's route) by `route`, then 417 for an `Expect` other than
 * 100-continue (which Node leaves to us).
 */
export function routeRequest(
  req: IncomingMessage,
  target: string,
  path: string,
  table?: RouteTable,
  audit = false,
): Route {
  if (req.headers.host === undefined && req.httpVersion === '1.1') throw errors.missingHost();
  const { raw, decoded } = checkTarget(target, path);
  // Only a `//`, a `/.` or an escape (`%2e`) can make a path that needs cleaning.
  const clean =
    path.includes('//') || path.includes('/.') || raw !== decoded ? cleaned(raw, decoded) : undefined;
  if (clean !== undefined) throw errors.movedPermanently(clean + target.slice(path.length));
  const matched = route(req.method ?? '', decoded, table, audit);
  const expect = req.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') throw errors.expectationFailed();
  return matched;
}
